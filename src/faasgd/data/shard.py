"""A worker's contiguous share of a data set split, read without loading the rest.

The validation rows are held out from the training split: the last `holdout` rows of the training
rows (after `limit`), part "validation"; part "train" is the rows before them, shared out among the
workers. So no worker ever trains on a validation row, whatever the number of workers, and each
part is read alone (memory grows with the part, not the split). `validation_rows` says how many rows
a job holds out: whole groups of `row_group` rows, so that an augmented set (data/augmented.py) holds out
whole source images and no copy of a validation image trains.
"""

from dataclasses import dataclass

import numpy as np

from faasgd.checks import whole_number
from faasgd.data import tabular
from faasgd.data.catalog import check_dataset, check_split, count_rows, dataset_info, iter_rows, row_group
from faasgd.errors import ConfigError, DataError

PARTS = ("train", "validation", "test")  # "validation": the held-out end of the training split
AUTO_VALIDATION_SHARE, AUTO_VALIDATION_MAX = 10, 5000  # validation_samples 0: rows // 10, at most 5000, at least 1


@dataclass(frozen=True)
class Shard:
    x: np.ndarray  # float32 (n, input_dim), pixels scaled to [0, 1]; uint8 raw pixels when loaded unscaled;
    #   tabular data sets (data/tabular.py): float32 rows, dense or a scipy CSR matrix (kept sparse)
    y: np.ndarray  # int64 (n,)
    n_classes: int  # classes of the data set (the model's output width)
    input_dim: int  # features per row (the model's input width)
    total: int  # rows in the whole part (the split after limit; training rows: less the held-out ones)
    start: int  # first row of this shard in the split's file (row index)
    stop: int  # one past the last row of this shard in the split's file


@dataclass(frozen=True)
class WorkerRows:
    """What a worker reads: its shard of the training rows, the held-out validation rows (the stop rule's) and the
    test rows (reported only, never a stop rule)."""

    train: Shard
    validation: Shard
    test: Shard


def shard_range(total: int, worker_id: int, number_of_workers: int) -> tuple[int, int]:
    """Return worker `worker_id`'s rows [floor(i*n/N), floor((i+1)*n/N)) of `total` rows split N ways."""
    check_workers(worker_id, number_of_workers)
    if total < 0:
        raise DataError(f"cannot shard a negative number of rows ({total})")
    return worker_id * total // number_of_workers, (worker_id + 1) * total // number_of_workers


def validation_rows(training_rows: int, validation_samples: int, number_of_workers: int = 1, group: int = 1) -> int:
    """Rows held out of `training_rows` (the training split after train_samples) for validation.

    `validation_samples` 0 means a tenth of them, at most 5000, at least 1; rounded up to whole groups of
    `group` rows (catalog.row_group: an augmented set's copies of one image). ConfigError naming
    validation_samples when what is held out leaves fewer training rows than workers.
    """
    whole_number(validation_samples, "validation_samples", low=0, must="0 (automatic) or a positive integer")
    held = validation_samples or max(1, min(AUTO_VALIDATION_MAX, training_rows // AUTO_VALIDATION_SHARE))
    held = -(-held // group) * group
    if training_rows - held < number_of_workers:
        raise ConfigError("validation_samples",
                          f"holding out {held} of the {training_rows} training rows leaves "
                          f"{max(0, training_rows - held)} to train {number_of_workers} worker(s) on; "
                          "hold out fewer rows, or use more training rows (train_samples)")
    return held


def load_shard(
    dataset: str,
    split: str = "train",
    worker_id: int = 0,
    number_of_workers: int = 1,
    limit: int = 0,
    scaled: bool = True,
    holdout: int = 0,
    after: int = 0,
) -> Shard:
    """Return worker `worker_id`'s shard of the first `limit` rows (all when 0) of a data set split.

    `split` is a part: "test", "train" (the training rows less the last `holdout`), or "validation"
    (those last `holdout` training rows). Only the shard's rows are read, so memory grows with the
    shard, not with the data set. `scaled=False` keeps the raw uint8 pixels (a quarter of the memory;
    see `scale_rows`), which suits data only evaluated in chunks, like a worker's test set. A tabular data set
    (data/tabular.py) gives its float32 rows (dense or CSR) whatever `scaled`; `after` is the job's train_samples
    (a generated set's test rows follow its training rows). Files are read from the data directory
    (fashion.fashion_dir: $FAASGD_DATA_DIR, else the default).
    """
    check_dataset(dataset)
    if split not in PARTS:
        raise ConfigError("split", f"must be one of {', '.join(PARTS)}, got {split!r}")
    check_workers(worker_id, number_of_workers)
    if limit < 0:
        raise ConfigError("limit", f"must be 0 (all rows) or positive, got {limit}")
    whole_number(holdout, "holdout", low=0, must="a number of rows >= 0")
    file_split = "test" if split == "test" else "train"
    check_split(file_split)
    rows = count_rows(dataset, file_split, limit)
    held = holdout if file_split == "train" else 0
    if held > rows:
        raise ConfigError("validation_samples", f"cannot hold out {held} of the {rows} training rows of {dataset}")
    if held % row_group(dataset, file_split):
        raise ConfigError("validation_samples", f"{dataset} holds out whole source images, groups of "
                                                f"{row_group(dataset, file_split)} rows; got {held} rows")
    first, total = (rows - held, held) if split == "validation" else (0, rows - held)
    if total < number_of_workers:
        raise ConfigError(
            "number_of_workers",
            f"{number_of_workers} workers over the {total} rows of {dataset} {split} leave some workers "
            f"no rows; use at most {total} workers or a larger limit",
        )
    start, stop = (first + bound for bound in shard_range(total, worker_id, number_of_workers))
    input_dim, n_classes = dataset_info(dataset)
    if tabular.is_tabular(dataset):
        x, y = tabular.rows(dataset, file_split, start, stop, after)
        return Shard(x=x, y=y, n_classes=n_classes, input_dim=input_dim, total=total, start=start, stop=stop)
    x = np.empty((stop - start, input_dim), dtype=np.float32 if scaled else np.uint8)
    y = np.empty(stop - start, dtype=np.int64)
    filled = 0
    for images, labels in iter_rows(dataset, file_split, start, stop):  # one chunk in memory at a time
        rows = len(labels)
        pixels = images.reshape(rows, input_dim)
        if scaled:
            np.divide(pixels, np.float32(255), out=x[filled:filled + rows])
        else:
            x[filled:filled + rows] = pixels
        y[filled:filled + rows] = labels
        filled += rows
    if filled != len(y):
        raise DataError(f"{dataset} {file_split}: read {filled} rows of [{start}, {stop})")
    return Shard(x=x, y=y, n_classes=n_classes, input_dim=input_dim, total=total, start=start, stop=stop)


def scale_pixels(images: np.ndarray, input_dim: int, out: np.ndarray | None = None) -> np.ndarray:
    """Return uint8 images (n, ...) as float32 rows (n, input_dim) in [0, 1]: in the first n rows of `out` (float32,
    at least n rows of input_dim) when given, else in one new array."""
    x = np.empty((len(images), input_dim), dtype=np.float32) if out is None else out[:len(images)]
    np.divide(images.reshape(len(images), input_dim), np.float32(255), out=x)
    return x


def scale_rows(x: np.ndarray, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
    """Rows [start, stop) of a shard's x as float32 in [0, 1], whether it holds scaled or raw pixels; raw ones are
    scaled into `out` when given (scale_pixels), so an evaluation a chunk at a time reuses one buffer."""
    rows = x[start:stop]
    return rows if rows.dtype == np.float32 else scale_pixels(rows, rows.shape[1], out)


def check_workers(worker_id: int, number_of_workers: int) -> None:
    """Raise ConfigError naming the field unless 0 <= worker_id < number_of_workers."""
    if number_of_workers < 1:
        raise ConfigError("number_of_workers", f"must be at least 1, got {number_of_workers}")
    if not 0 <= worker_id < number_of_workers:
        raise ConfigError("worker_id", f"must be in [0, {number_of_workers}), got {worker_id}")
