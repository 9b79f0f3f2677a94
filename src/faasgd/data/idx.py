"""IDX files (the MNIST family's format), gzip'd or not, read one row range at a time.

A reader skips to the first wanted row (gzip streams decompress and discard what they skip) and reads
only the wanted rows, so memory grows with the rows asked for, never with the file.
See http://yann.lecun.com/exdb/mnist/ for the format: two zero bytes, a type code, the number of
dimensions, one big-endian uint32 per dimension, then the values row after row.
"""

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from faasgd.data import inflated
from faasgd.errors import DataError

GZIP_MAGIC = b"\x1f\x8b"

IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


@dataclass(frozen=True)
class IdxHeader:
    dtype: np.dtype  # element type as stored (big-endian for multi-byte types)
    shape: tuple[int, ...]  # full shape; shape[0] is the number of rows
    offset: int  # bytes from the start of the file to the first value

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize


def read_header(stream: BinaryIO, name: str) -> IdxHeader:
    """Read the IDX header at the start of `stream`; `name` identifies the file in errors."""
    magic = read_bytes(stream, 0, 4, name)
    if len(magic) != 4 or magic[0] != 0 or magic[1] != 0:
        raise DataError(f"{name}: not an IDX file (bad magic {magic!r})")
    dtype = IDX_TYPES.get(magic[2])
    if dtype is None:
        raise DataError(f"{name}: unknown IDX type code {magic[2]:#04x}")
    ndim = magic[3]
    dims = read_bytes(stream, 4, 4 * ndim, name)
    if ndim == 0 or len(dims) != 4 * ndim:
        raise DataError(f"{name}: IDX header declares {ndim} dimensions but is truncated or empty")
    shape = tuple(int(d) for d in np.frombuffer(dims, dtype=">u4"))
    return IdxHeader(dtype=dtype, shape=shape, offset=4 + 4 * ndim)


def read_rows(stream: BinaryIO, header: IdxHeader, start: int, stop: int, name: str) -> np.ndarray:
    """Return rows [start, stop) as a native-endian array of shape (stop - start, *header.shape[1:])."""
    if not 0 <= start <= stop <= header.rows:
        raise DataError(f"{name}: row range [{start}, {stop}) outside the file's {header.rows} rows")
    wanted = (stop - start) * header.row_bytes
    data = read_bytes(stream, header.offset + start * header.row_bytes, wanted, name)
    if len(data) != wanted:
        raise DataError(f"{name}: truncated, expected {wanted} bytes of rows [{start}, {stop}), got {len(data)}")
    rows = np.frombuffer(data, dtype=header.dtype).reshape((stop - start, *header.shape[1:]))
    return rows.astype(header.dtype.newbyteorder("="), copy=False)  # bytes need no swap: no second copy


@contextmanager
def open_idx(path: str) -> Iterator[BinaryIO]:
    """Open an IDX file for binary reading. One that starts with the gzip magic is read from its inflated copy
    (faasgd.data.inflated: made once, then seekable), else decompressed as it is read."""
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot open IDX file ({e.strerror})") from e
    with raw:
        if raw.read(2) != GZIP_MAGIC:
            raw.seek(0)
            yield raw
            return
        raw.seek(0)
        with gzip.GzipFile(fileobj=raw) as stream:
            header = read_header(stream, path)
            copy = inflated.inflated(path, header.offset + header.rows * header.row_bytes)
            if copy is None:
                yield stream
                return
        with open(copy, "rb") as plain:
            yield plain


def load_idx(path: str, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Return rows [start, stop) of the IDX file at `path` (all rows from `start` when stop is None)."""
    with open_idx(path) as stream:
        header = read_header(stream, path)
        return read_rows(stream, header, start, header.rows if stop is None else stop, path)


def count_idx(path: str) -> int:
    """Return the number of rows of the IDX file at `path`, reading only its header."""
    with open_idx(path) as stream:
        return read_header(stream, path).rows


def read_bytes(stream: BinaryIO, position: int, size: int, name: str) -> bytes:
    """Return up to `size` bytes from `position`, turning gzip and I/O failures into DataError."""
    try:
        stream.seek(position)
        return stream.read(size)
    except (OSError, EOFError) as e:
        raise DataError(f"{name}: unreadable IDX file ({e})") from e


def check_pair(images: IdxHeader, labels: IdxHeader, image_shape: tuple[int, ...], name: str) -> int:
    """Return the row count after checking images are (n, *image_shape) bytes and labels (n,) integers."""
    if images.shape[1:] != image_shape or images.dtype != np.uint8:
        raise DataError(f"{name}: images have shape {images.shape} of {images.dtype}, "
                        f"expected (n, {', '.join(map(str, image_shape))}) of uint8")
    if len(labels.shape) != 1 or labels.dtype.kind not in "iu":
        raise DataError(f"{name}: labels have shape {labels.shape} of {labels.dtype}, expected (n,) integers")
    if images.rows != labels.rows:
        raise DataError(f"{name}: {images.rows} images but {labels.rows} labels")
    return images.rows
