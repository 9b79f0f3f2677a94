"""Fashion-MNIST from the IDX files Debian's `dataset-fashion-mnist` package installs.

The directory is the `data_dir` argument, else $FAASGD_DATA_DIR, else DEFAULT_DIR. Each file may be
gzip'd (`NAME.gz`, preferred) or plain (`NAME`).
"""

import os
from collections.abc import Iterator

import numpy as np

from faasgd.data.idx import check_pair, open_idx, read_header, read_rows
from faasgd.errors import DataMissing

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
DATA_DIR_ENV = "FAASGD_DATA_DIR"
IMAGE_SHAPE = (28, 28)
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def fashion_dir(data_dir: str | None = None) -> str:
    """Return the directory holding the IDX files: argument, then environment, then Debian's default."""
    return data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DIR


def find_files(split: str, data_dir: str | None = None) -> tuple[str, str]:
    """Return the (images, labels) paths of `split`, raising DataMissing that says how to get them."""
    directory = fashion_dir(data_dir)
    return tuple(find_file(directory, name) for name in FILES[split])


def find_file(directory: str, name: str) -> str:
    """Return DIR/NAME.gz or DIR/NAME, whichever exists first."""
    for candidate in (os.path.join(directory, name + ".gz"), os.path.join(directory, name)):
        if os.path.isfile(candidate):
            return candidate
    raise DataMissing("fashion-mnist", f"no IDX files in {directory}, missing {name}.gz; or set {DATA_DIR_ENV}",
                      "apt-get install dataset-fashion-mnist")


def count_rows(split: str, data_dir: str | None = None) -> int:
    """Return the number of rows of `split`, reading only the two headers."""
    images_path, labels_path = find_files(split, data_dir)
    with open_idx(images_path) as images, open_idx(labels_path) as labels:
        return check_pair(read_header(images, images_path), read_header(labels, labels_path), IMAGE_SHAPE,
                          f"fashion-mnist {split}")


def iter_split_rows(
    split: str, start: int, stop: int, data_dir: str | None = None, chunk_rows: int = 4096
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield uint8 images (k, 28, 28) and labels (k,) of rows [start, stop) of `split`, k <= chunk_rows."""
    images_path, labels_path = find_files(split, data_dir)
    with open_idx(images_path) as images, open_idx(labels_path) as labels:
        images_header = read_header(images, images_path)
        labels_header = read_header(labels, labels_path)
        check_pair(images_header, labels_header, IMAGE_SHAPE, f"fashion-mnist {split}")
        for first in range(start, stop, chunk_rows):
            last = min(stop, first + chunk_rows)
            yield (read_rows(images, images_header, first, last, images_path),
                   read_rows(labels, labels_header, first, last, labels_path))
