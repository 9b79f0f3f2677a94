"""A model file read as data: every size it declares is checked before anything is inflated.

    arrays = read_arrays("model.npz", expected_params)   # {field: ndarray}; ConfigError('model') otherwise

A file from outside may be a FIFO, a device, a text file, a bare .npy or a zip bomb. In order:
  * the path must name a regular file (os.stat, then fstat of a descriptor opened O_NONBLOCK, so a FIFO
    never blocks the open) of at most MAX_FILE_BYTES, read whole (no more than that many bytes);
  * its first bytes must be a zip's (a bare .npy array and text are named as such);
  * the zip's directory may hold only the model's fields (`<field>.npy`, each once), stored or deflated,
    each declaring (file_size) no more than its budget: a scalar MAX_TEXT_CHARS characters, `sizes`
    MAX_LAYERS widths, `params` MAX_PARAMS floats;
  * each member's .npy header (shape, dtype) is read before its data: no object dtype, and no more bytes
    than the budget; `sizes` (and `cnn_arch`) are read first, so `params` must declare exactly the
    network's parameter count (`expected_params(sizes, arch)`) before a byte of it is inflated.
A member whose deflated stream holds more than its directory entry declares stops at the declared size
(zipfile's reader), and then fails its CRC: refused too.

The one safe-npz reader: the members of any npz faasgd reads from outside go through `read_header` and
`read_member` (a stacking object's too: `read_npz`, which faasgd.stacking.safe_format uses with its own rules and
errors), so no archive is inflated past what its directory and headers declare and no object array is read.
"""

from __future__ import annotations

import io
import math
import os
import stat
import struct
import zipfile
from typing import Callable

import numpy as np

from faasgd.errors import ConfigError, FaasgdError

MAX_PARAMS = 1 << 26  # floats in `params` (256 MiB): four buffers of more could not train in a 1 GiB function
MAX_LAYERS = 64  # widths in `sizes`
MAX_TEXT_CHARS = 4096  # characters in a text field (dataset, job_id, ...)
HEADER_BYTES = 1 << 16  # an .npy header's size at most (numpy's format 2 allows 64 KiB of header)
MAX_FILE_BYTES = MAX_PARAMS * 4 + (1 << 20)  # the whole file: the largest params plus the small fields
END_SEARCH = 22 + (1 << 16)  # the end record and the longest zip comment: where zipfile looks for it
NPY_MAGIC, ZIP_MAGIC = b"\x93NUMPY", (b"PK\x03\x04", b"PK\x05\x06")
KINDS = {stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
         stat.S_ISSOCK: "a socket", stat.S_ISDIR: "a folder"}


def refuse(message: str) -> ConfigError:
    return ConfigError("model", message)


def not_model(detail: str) -> ConfigError:
    return refuse(f"not a faasgd model file: {detail}")


def read_file(path: str) -> bytes:
    """The bytes of the regular file at `path`, at most MAX_FILE_BYTES; refused naming what it is otherwise."""
    try:
        check_regular(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO put there since the stat cannot block the open
    except FileNotFoundError:
        raise refuse(f"no file {path!r}") from None
    except OSError as error:
        raise refuse(f"cannot read {path!r}: {error.strerror or error}") from None
    with os.fdopen(fd, "rb") as f:
        check_regular(path, os.fstat(fd))
        raw = f.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise refuse(f"{path!r} is larger than a model file can be ({MAX_FILE_BYTES:,} bytes)")
    return raw


def check_regular(path: str, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        if info.st_size > MAX_FILE_BYTES:
            raise refuse(f"{path!r} is {info.st_size:,} bytes, more than a model file can be ({MAX_FILE_BYTES:,})")
        return
    kind = next((name for test, name in KINDS.items() if test(info.st_mode)), "not a regular file")
    raise refuse(f"{path!r} is {kind}, not a model file (an npz file written by `faasgd model`)")


def check_magic(raw: bytes) -> None:
    """An npz is a zip: a bare .npy array or a text file is named as such."""
    if raw.startswith(ZIP_MAGIC):
        return
    if raw.startswith(NPY_MAGIC):
        raise refuse("a bare .npy array, not a model file (an npz of named fields, written by `faasgd model`)")
    head = raw[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:  # a character cut at the end of the head is still text
        text = head[:error.start].decode("utf-8") if error.start > len(head) - 4 else None
    plain = text is not None and all(c.isprintable() or c in "\t\r\n" for c in text)
    what = "an empty file" if not raw else "a text file" if plain else "not a zip"
    raise refuse(f"{what}, not a faasgd model file (an npz: a zip of .npy arrays, written by `faasgd model`)")


def check_end_record(raw: bytes, fields: set[str]) -> None:
    """The zip's end record declares at most one entry per field in a small directory, before zipfile reads it
    (a directory of millions of entries would cost gigabytes to list). A model file never needs zip64's."""
    end = raw.rfind(b"PK\x05\x06", max(0, len(raw) - END_SEARCH))
    if end < 0 or len(raw) < end + 22:
        raise refuse("not a faasgd model file (an npz): no zip directory at its end")
    entries, directory_bytes = struct.unpack_from("<HI", raw, end + 10)
    if raw[max(0, end - 20):end - 16] == b"PK\x06\x07" or entries > len(fields) or directory_bytes > HEADER_BYTES:
        raise refuse(f"its zip directory declares {entries} entries in {directory_bytes:,} bytes (zip64 or more "
                     f"than the {len(fields)} fields of a model file)")


def member_budget(field: str) -> int:
    """The most bytes a field's .npy member may declare, header included."""
    items = {"params": MAX_PARAMS * 4, "sizes": MAX_LAYERS * 8}.get(field, MAX_TEXT_CHARS * 4)
    return HEADER_BYTES + items


def check_directory(archive: zipfile.ZipFile, fields: set[str]) -> dict[str, zipfile.ZipInfo]:
    """The members by field, each a known field once, stored or deflated, within its budget."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        field = info.filename.removesuffix(".npy")
        if field not in fields or not info.filename.endswith(".npy") or field in members:
            raise refuse(f"member {info.filename[:80]!r} is not a field of a model file (or is there twice)")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise refuse(f"member {info.filename!r} is compressed with method {info.compress_type}: a model file "
                         "is stored or deflated")
        if info.file_size > member_budget(field):
            raise refuse(f"field {field} declares {info.file_size:,} bytes, more than it can hold "
                         f"({member_budget(field):,})")
        members[field] = info
    return members


Refuse = Callable[[str], FaasgdError]  # the error a refused archive raises, given what is wrong


def read_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                refused: Refuse = refuse) -> tuple[tuple[int, ...], np.dtype]:
    """A member's declared shape and dtype, from its .npy header alone."""
    with archive.open(info) as f:
        version = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = reader(f, max_header_size=HEADER_BYTES)
    if dtype.hasobject:
        raise refused(f"field {info.filename.removesuffix('.npy')} holds pickled objects (dtype {dtype})")
    return tuple(int(n) for n in shape), dtype


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, refused: Refuse = refuse) -> np.ndarray:
    """A member's array, after its header declares at most `limit` items within the member's size."""
    field = info.filename.removesuffix(".npy")
    shape, dtype = read_header(archive, info, refused)
    items = math.prod(shape)
    if items > limit or items * dtype.itemsize > info.file_size:
        raise refused(f"field {field} declares shape {shape} of {dtype}: more than the file holds or its "
                      f"{field} can be ({limit:,} items)")
    with archive.open(info) as f:
        return np.lib.format.read_array(f, allow_pickle=False, max_header_size=HEADER_BYTES)


def read_npz(raw: bytes, refused: Refuse, check: Callable[[list[zipfile.ZipInfo]], None],
             limit: int) -> dict[str, np.ndarray]:
    """Every member's array of the npz `raw` by name, each read as read_member reads it (no more than `limit` items);
    `check` refuses the archive from its directory before any member is read (names, methods, sizes)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = archive.infolist()
            check(members)
            return {info.filename.removesuffix(".npy"): read_member(archive, info, limit, refused) for info in members}
    except FaasgdError:
        raise
    except (ValueError, OSError, EOFError, KeyError, NotImplementedError, zipfile.BadZipFile,
            zipfile.LargeZipFile) as error:
        raise refused(f"unreadable npz: {type(error).__name__}: {str(error)[:200]}") from None


def read_arrays(source: bytes | str, fields: set[str],
                expected_params: Callable[[np.ndarray, np.ndarray | None], int]) -> dict[str, np.ndarray]:
    """The model file's arrays (a path or the bytes); `expected_params(sizes, cnn_arch)`: the parameter count
    the declared network has (a ConfigError when it has none), which `params` must declare before it is read."""
    raw = bytes(source) if isinstance(source, (bytes, bytearray)) else read_file(os.fspath(source))
    if len(raw) > MAX_FILE_BYTES:
        raise refuse(f"{len(raw):,} bytes, more than a model file can be ({MAX_FILE_BYTES:,})")
    check_magic(raw)
    check_end_record(raw, fields)
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = check_directory(archive, fields)
            arrays = {field: read_member(archive, info, MAX_LAYERS if field == "sizes" else MAX_TEXT_CHARS, not_model)
                      for field, info in members.items() if field != "params"}
            if "params" in members and "sizes" not in arrays:
                raise refuse("not a faasgd model file: fields sizes missing")
            if "params" in members:
                expected = expected_params(arrays["sizes"], arrays.get("cnn_arch"))
                if expected > MAX_PARAMS:
                    raise refuse(f"its sizes make a network of {expected:,} parameters, more than a model file can "
                                 f"hold ({MAX_PARAMS:,})")
                arrays["params"] = read_member(archive, members["params"], expected, not_model)
    except ConfigError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError, NotImplementedError) as error:
        raise refuse(f"not a faasgd model file (an npz without pickled objects): {error}") from None
    return arrays
