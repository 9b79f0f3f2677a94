"""A worker's contiguous share of a data set split, read without loading the rest."""

from dataclasses import dataclass

import numpy as np

from faasgd.data.catalog import check_dataset, check_split, count_rows, dataset_info, iter_rows
from faasgd.errors import ConfigError, DataError


@dataclass(frozen=True)
class Shard:
    x: np.ndarray  # float32 (n, input_dim), pixels scaled to [0, 1]; uint8 raw pixels when loaded unscaled
    y: np.ndarray  # int64 (n,)
    n_classes: int  # classes of the data set (the model's output width)
    input_dim: int  # features per row (the model's input width)
    total: int  # rows in the whole split (after limit)
    start: int  # first row of this shard in the split
    stop: int  # one past the last row of this shard in the split


def shard_range(total: int, worker_id: int, number_of_workers: int) -> tuple[int, int]:
    """Return worker `worker_id`'s rows [floor(i*n/N), floor((i+1)*n/N)) of `total` rows split N ways."""
    check_workers(worker_id, number_of_workers)
    if total < 0:
        raise DataError(f"cannot shard a negative number of rows ({total})")
    return worker_id * total // number_of_workers, (worker_id + 1) * total // number_of_workers


def load_shard(
    dataset: str,
    split: str = "train",
    worker_id: int = 0,
    number_of_workers: int = 1,
    limit: int = 0,
    data_dir: str | None = None,
    scaled: bool = True,
) -> Shard:
    """Return worker `worker_id`'s shard of the first `limit` rows (all when 0) of a data set split.

    Only the shard's rows are read, so memory grows with the shard, not with the data set.
    `scaled=False` keeps the raw uint8 pixels (a quarter of the memory; see `scale_rows`), which
    suits data only evaluated in chunks, like a worker's test set.
    """
    check_dataset(dataset)
    check_split(split)
    check_workers(worker_id, number_of_workers)
    if limit < 0:
        raise ConfigError("limit", f"must be 0 (all rows) or positive, got {limit}")
    total = count_rows(dataset, split, limit, data_dir)
    if total < number_of_workers:
        raise ConfigError(
            "number_of_workers",
            f"{number_of_workers} workers over the {total} rows of {dataset} {split} leave some workers "
            f"no rows; use at most {total} workers or a larger limit",
        )
    start, stop = shard_range(total, worker_id, number_of_workers)
    input_dim, n_classes = dataset_info(dataset)
    x = np.empty((stop - start, input_dim), dtype=np.float32 if scaled else np.uint8)
    y = np.empty(stop - start, dtype=np.int64)
    filled = 0
    for images, labels in iter_rows(dataset, split, start, stop, data_dir):  # one chunk in memory at a time
        rows = len(labels)
        pixels = images.reshape(rows, input_dim)
        if scaled:
            np.divide(pixels, np.float32(255), out=x[filled:filled + rows])
        else:
            x[filled:filled + rows] = pixels
        y[filled:filled + rows] = labels
        filled += rows
    if filled != len(y):
        raise DataError(f"{dataset} {split}: read {filled} rows of [{start}, {stop})")
    return Shard(x=x, y=y, n_classes=n_classes, input_dim=input_dim, total=total, start=start, stop=stop)


def scale_pixels(images: np.ndarray, input_dim: int) -> np.ndarray:
    """Return uint8 images (n, ...) as float32 rows (n, input_dim) in [0, 1], with a single allocation."""
    x = np.empty((len(images), input_dim), dtype=np.float32)
    np.divide(images.reshape(len(images), input_dim), np.float32(255), out=x)
    return x


def scale_rows(x: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of a shard's x as float32 in [0, 1], whether it holds scaled or raw pixels."""
    rows = x[start:stop]
    return rows if rows.dtype == np.float32 else scale_pixels(rows, rows.shape[1])


def check_workers(worker_id: int, number_of_workers: int) -> None:
    """Raise ConfigError naming the field unless 0 <= worker_id < number_of_workers."""
    if number_of_workers < 1:
        raise ConfigError("number_of_workers", f"must be at least 1, got {number_of_workers}")
    if not 0 <= worker_id < number_of_workers:
        raise ConfigError("worker_id", f"must be in [0, {number_of_workers}), got {worker_id}")
