"""What test.sh accepts before it parses, enumerates or writes anything: the matrix file's size, the values
its YAML holds, the runs a batch may make and the output folder.

    text = read_bounded(path)                 # a regular file of at most MAX_MATRIX_BYTES, read whole
    check_values(document)                    # at most MAX_VALUES values, YAML aliases counted each time used
    max_runs("1e4")                           # --max-runs: a whole number in [1, MAX_RUNS]
    check_out(path)                           # --out: a folder, or one that can be made (probed, also --dry-run)

The number of runs is computed from the axes' lengths (matrix.count_configurations) and refused above
--max-runs before any configuration is built; MAX_RUNS bounds --max-runs itself, so no flag makes test.sh
build more configurations than that. Every refusal is a ConfigError naming the field and the limit.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from faasgd.errors import ConfigError

MAX_MATRIX_BYTES = 256 << 10  # a matrix file's size (the bench's are about 1 KB; PyYAML parses ~150 KB/s)
MAX_VALUES = 100_000  # scalars, lists and mappings in the matrix document, every use of an alias counted
MAX_RUNS = 100_000  # --max-runs at most: configurations x rounds of one batch (each a job of seconds to minutes)


def read_bounded(path: str | os.PathLike) -> str:
    """The matrix file's text: a regular file (a FIFO or device is refused before it is opened, and the open
    cannot block) of at most MAX_MATRIX_BYTES of UTF-8; ConfigError('matrix') naming the problem."""
    try:
        check_matrix_file(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO put there since the stat cannot block the open
        with os.fdopen(fd, "rb") as f:
            check_matrix_file(path, os.fstat(fd))
            raw = f.read(MAX_MATRIX_BYTES + 1)
        if len(raw) > MAX_MATRIX_BYTES:
            raise ConfigError("matrix", f"{path} is larger than a matrix file may be ({MAX_MATRIX_BYTES:,} bytes)")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError("matrix", f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None


def check_matrix_file(path: str | os.PathLike, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError("matrix", f"cannot read {path}: not a regular file (a matrix is a YAML file)")
    if info.st_size > MAX_MATRIX_BYTES:
        raise ConfigError("matrix", f"{path} is {info.st_size:,} bytes, more than a matrix file may be "
                                    f"({MAX_MATRIX_BYTES:,})")


def check_values(document: Any) -> None:
    """At most MAX_VALUES values in the parsed document, counting an alias each time it is used (what writing
    the matrix into meta.json would expand); stops counting at the limit."""
    pending, seen = [document], 0
    while pending:
        value = pending.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ConfigError("matrix", f"holds more than {MAX_VALUES:,} values (YAML aliases counted each time "
                                        "they are used)")
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def max_runs(text: str) -> int:
    """--max-runs: a whole number (1000, 1e4) in [1, MAX_RUNS]; ConfigError('max_runs') otherwise."""
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not number.is_integer() or not 1 <= number <= MAX_RUNS:
        raise ConfigError("max_runs", f"must be a whole number in [1, {MAX_RUNS:,}] (runs of one batch), got {text!r}")
    return int(number)


def check_out(path: Path) -> None:
    """--out: a folder, or a path whose nearest existing parent is one, that a folder can be made in (probed:
    one made and removed at once, so /proc/self/x is refused); ConfigError('out') naming the path otherwise."""
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        raise ConfigError("out", f"{path} exists and is not a folder")
    parent = path.absolute()
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    try:
        if not parent.is_dir():
            raise NotADirectoryError(0, f"{parent} is not a folder")
        os.rmdir(tempfile.mkdtemp(prefix=".test.sh-probe-", dir=parent))
    except OSError as error:
        raise ConfigError("out", f"cannot make the folder {path} in {parent}: {error.strerror or error}") from None
