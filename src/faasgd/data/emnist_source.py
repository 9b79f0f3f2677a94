"""EMNIST variants from NIST's archive, read one row range at a time; never downloaded here.

The archive is NIST's gzip.zip at $FAASGD_EMNIST_ARCHIVE, else at the `emnist` package's cache path
(`emnist.get_cached_data_path()`, by default ~/.cache/emnist/emnist.zip), with members named by
`emnist.ZIP_PATH_TEMPLATE`. Only `faasgd data fetch emnist` puts it there (verified): a training
call for a missing archive is a DataMissing (409) naming that command, and downloads nothing.
The package's own loader decompresses a whole member into memory; here each member is streamed
through gzip instead, so only the shard's rows are kept. Images get the package's transpose
(swapaxes(1, 2)).
"""

import gzip
import os
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import numpy as np

from faasgd.data.idx import check_pair, read_header, read_rows
from faasgd.errors import DataError, DataMissing

IMAGE_SHAPE = (28, 28)
NIST_URL = "https://www.nist.gov/itl/iad/image-group/emnist-dataset"
ARCHIVE_ENV = "FAASGD_EMNIST_ARCHIVE"  # where the archive is, when not at the package's cache path
FETCH_COMMAND = "faasgd data fetch emnist"


def package():
    """The `emnist` package, imported on first use: it pulls in requests, which other data sets never need."""
    import emnist

    return emnist


def archive_location() -> str:
    """Where the archive is read (and fetched) to: $FAASGD_EMNIST_ARCHIVE, else the package's cache path."""
    return os.environ.get(ARCHIVE_ENV) or package().get_cached_data_path()


def archive_path(dataset: str) -> str:
    """Return the path of the archive; DataMissing (409) naming the fetch command when it is not there."""
    path = archive_location()
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        return path
    raise DataMissing(dataset, f"no EMNIST archive at {path}", FETCH_COMMAND)


def archive_variants(path: str) -> list[str]:
    """The EMNIST variants an archive holds (by its test-images members), from its directory alone."""
    pattern = package().DATASET_ZIP_PATH_REGEX
    try:
        with zipfile.ZipFile(path) as archive:
            return sorted(m.group(1) for m in map(pattern.fullmatch, archive.namelist()) if m)
    except (OSError, zipfile.BadZipFile) as e:
        raise DataError(f"emnist: {path} is not a readable zip archive ({e})") from e


def member_name(variant: str, split: str, component: str) -> str:
    """Return the archive member holding `component` ("images" or "labels") of a variant's split."""
    dim = 3 if component == "images" else 1
    return package().ZIP_PATH_TEMPLATE.format(dataset=variant, usage=split, matrix=component, dim=dim)


@contextmanager
def open_member(archive: zipfile.ZipFile, name: str, dataset: str) -> Iterator[BinaryIO]:
    """Open one gzip'd member of the archive as a decompressed stream."""
    try:
        member = archive.open(name)
    except KeyError as e:
        raise DataError(f"{dataset}: the EMNIST archive {archive.filename} has no member {name}") from e
    with member, gzip.GzipFile(fileobj=member) as stream:
        yield stream


@contextmanager
def open_split(variant: str, split: str) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Open the (images, labels) streams of `split` of EMNIST `variant` (e.g. "digits")."""
    dataset = f"emnist-{variant}"
    path = archive_path(dataset)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise DataError(
            f"{dataset}: {path} is not a readable zip archive ({e}); replace it with `{FETCH_COMMAND} --force`"
        ) from e
    with archive, \
            open_member(archive, member_name(variant, split, "images"), dataset) as images, \
            open_member(archive, member_name(variant, split, "labels"), dataset) as labels:
        yield images, labels


def count_rows(variant: str, split: str) -> int:
    """Return the number of rows of `split` of EMNIST `variant`, reading only the two headers."""
    name = f"emnist-{variant} {split}"
    with open_split(variant, split) as (images, labels):
        return check_pair(read_header(images, f"{name} images"), read_header(labels, f"{name} labels"),
                          IMAGE_SHAPE, name)


def iter_split_rows(variant: str, split: str, start: int, stop: int,
                    chunk_rows: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield images (k, 28, 28), transposed as the package does, and labels (k,) of rows [start, stop)."""
    name = f"emnist-{variant} {split}"
    with open_split(variant, split) as (images, labels):
        images_header = read_header(images, f"{name} images")
        labels_header = read_header(labels, f"{name} labels")
        check_pair(images_header, labels_header, IMAGE_SHAPE, name)
        for first in range(start, stop, chunk_rows):
            last = min(stop, first + chunk_rows)
            pixels = read_rows(images, images_header, first, last, f"{name} images")
            yield pixels.swapaxes(1, 2), read_rows(labels, labels_header, first, last, f"{name} labels")
