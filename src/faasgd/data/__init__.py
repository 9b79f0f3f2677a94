"""Data sets (fashion-mnist, emnist-*, synthetic) and per-worker shards read without loading the rest."""

from faasgd.data.catalog import DATASETS, SPLITS, count_rows, dataset_info
from faasgd.data.shard import PARTS, Shard, load_shard, scale_rows, shard_range, validation_rows

__all__ = ["DATASETS", "SPLITS", "Shard", "count_rows", "dataset_info", "load_shard", "scale_rows",
           "shard_range", "validation_rows", "PARTS"]
