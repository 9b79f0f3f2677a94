"""Data sets (fashion-mnist, emnist-*, synthetic, fashion-mnist-xF) and per-worker shards read without the rest."""

from faasgd.data.catalog import DATASETS, SPLITS, TABULAR, count_rows, dataset_info, is_tabular, row_group
from faasgd.data.shard import PARTS, Shard, WorkerRows, load_shard, scale_rows, shard_range, validation_rows

__all__ = ["DATASETS", "SPLITS", "TABULAR", "is_tabular", "Shard", "WorkerRows", "count_rows", "dataset_info", "load_shard", "scale_rows",
           "row_group", "shard_range", "validation_rows", "PARTS"]
