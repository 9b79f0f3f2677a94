"""Data sets (fashion-mnist, emnist-*, synthetic) and per-worker shards read without loading the rest."""

from faasgd.data.catalog import DATASETS, SPLITS, dataset_info
from faasgd.data.shard import Shard, load_shard, scale_rows, shard_range

__all__ = ["DATASETS", "SPLITS", "Shard", "dataset_info", "load_shard", "scale_rows", "shard_range"]
