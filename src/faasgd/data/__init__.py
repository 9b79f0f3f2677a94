"""Data sets (fashion-mnist, emnist-*, synthetic) and per-worker shards read without loading the rest."""

from faasgd.data.catalog import DATASETS, SPLITS, TABULAR, count_rows, dataset_info, is_tabular
from faasgd.data.shard import PARTS, Shard, load_shard, scale_rows, shard_range, validation_rows

__all__ = ["DATASETS", "SPLITS", "TABULAR", "is_tabular", "Shard", "count_rows", "dataset_info", "load_shard", "scale_rows",
           "shard_range", "validation_rows", "PARTS"]
