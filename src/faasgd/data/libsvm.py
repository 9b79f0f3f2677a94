"""Our own reader of libsvm / svmlight text files (the core does not import scikit-learn).

One row per line: `LABEL INDEX:VALUE INDEX:VALUE ... # comment`. The decisions:
- indices are 1-based (libsvm's convention) and strictly increasing within a line; index 0, a repeated
  or decreasing index is an error (scikit-learn would guess 0-based from a 0; we refuse to guess);
- `qid:N` (ranking data) is refused: faasgd's models are classifiers, and a silently dropped qid would
  turn a ranking task into a wrong classification one;
- `#` starts a comment anywhere; blank and comment-only lines are skipped (line numbers still count them);
- labels must be whole numbers, normalised to 0..C-1: a file whose labels are within {-1, +1} maps
  -1 -> 0, +1 -> 1; within {0, 1} they stay; otherwise the sorted distinct labels map to 0..C-1
  (libsvm's multiclass 1..C becomes 0..C-1). Pass the training file's `classes` to read its test file
  with the same mapping (a label outside them is an error);
- the width is the largest index, or `n_features` when given (a larger index is then an error);
- X is a float32 scipy CSR matrix, or a dense float32 array with `dense=True`. Files ending in .gz or
  .bz2 are decompressed on the fly.
Every error is a DataError naming the file and the line number (1-based) and what was found there.
"""

from __future__ import annotations

import bz2
import gzip
import math
import os
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from faasgd.checks import whole_number
from faasgd.errors import ConfigError, DataError

if TYPE_CHECKING:
    import scipy.sparse as sp

BINARY_CONVENTIONS = ((-1.0, 1.0), (0.0, 1.0))  # label sets read as a binary task, in this order


class Libsvm(NamedTuple):
    """A libsvm file's rows: X, labels 0..C-1, and the original label of each class."""

    X: "sp.csr_matrix | np.ndarray"  # (n, n_features) float32, CSR unless dense was asked
    y: np.ndarray  # (n,) int64 in 0..C-1
    classes: tuple  # the file's label of class 0, 1, ... (pass it on to read a test file alike)


def read_libsvm(path: str | os.PathLike, n_features: int | None = None, dense: bool = False,
                classes: tuple | None = None) -> Libsvm:
    """Return the rows of the libsvm file at `path` (see the module docstring for the rules)."""
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    if n_features is not None:
        whole_number(n_features, "n_features", low=1, must="an integer of at least 1")
    name = os.fspath(path)
    labels, indptr, indices, values = [], [0], [], []
    try:
        with open_text(name) as lines:
            for number, line in enumerate(lines, start=1):
                row = parse_line(line, name, number)
                if row is None:
                    continue
                label, cols, vals = row
                if n_features is not None and cols and cols[-1] > n_features:
                    raise DataError(f"{name} line {number}: index {cols[-1]} exceeds n_features {n_features}")
                labels.append((label, number))
                indices.extend(cols)
                values.extend(vals)
                indptr.append(len(indices))
    except FileNotFoundError as e:
        raise DataError(f"{name}: no such libsvm file") from e
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{name}: cannot read it as a libsvm text file ({e})") from e
    if not labels:
        raise DataError(f"{name}: no rows (only blank or comment lines)")
    width = n_features or max(indices, default=0) or 1
    X = sp.csr_matrix((np.array(values, dtype=np.float32), np.array(indices, dtype=np.int64) - 1,
                       np.array(indptr, dtype=np.int64)), shape=(len(labels), width))
    y, classes = normalise_labels(labels, name, classes)
    return Libsvm(X.toarray() if dense else X, y, classes)


def parse_line(line: str, name: str, number: int):
    """Return (label, 1-based indices, values) of one line, or None for a blank or comment line."""
    tokens = line.split("#", 1)[0].split()
    if not tokens:
        return None
    label = parse_number(tokens[0], name, number, "label")
    if label != math.floor(label):
        raise DataError(f"{name} line {number}: label {tokens[0]!r} is not a whole number (classes only)")
    cols, vals, last = [], [], 0
    for token in tokens[1:]:
        index, sep, value = token.partition(":")
        if not sep:
            raise DataError(f"{name} line {number}: {token!r} is not INDEX:VALUE")
        if index == "qid":
            raise DataError(f"{name} line {number}: qid (ranking data) is not supported")
        if not (index.isascii() and index.isdigit()):
            raise DataError(f"{name} line {number}: index {index!r} is not a positive integer")
        col = int(index)
        if col < 1:
            raise DataError(f"{name} line {number}: index {col}: indices are 1-based")
        if col <= last:
            raise DataError(f"{name} line {number}: index {col} after {last}: indices must increase")
        cols.append(col)
        vals.append(parse_number(value, name, number, f"value of index {col}"))
        last = col
    return label, cols, vals


def parse_number(text: str, name: str, number: int, what: str) -> float:
    """Return text as a finite float; DataError naming the line otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{name} line {number}: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise DataError(f"{name} line {number}: {what} {text!r} is not finite")
    return value


def normalise_labels(labels: list, name: str, classes: tuple | None) -> tuple[np.ndarray, tuple]:
    """Return (labels as 0..C-1, the classes' original labels) by the module's rules."""
    seen = {label for label, _ in labels}
    if classes is None:
        binary = [c for c in BINARY_CONVENTIONS if seen <= set(c)]
        classes = binary[0] if binary else tuple(sorted(seen))
    classes = tuple(int(c) for c in classes)
    code = {float(c): i for i, c in enumerate(classes)}
    y = np.empty(len(labels), dtype=np.int64)
    for i, (label, number) in enumerate(labels):
        if label not in code:
            raise DataError(f"{name} line {number}: label {label:g} is not one of the classes {list(classes)}")
        y[i] = code[label]
    return y, classes


def open_text(name: str):
    """Open a libsvm file for reading text, decompressing .gz and .bz2."""
    if name.endswith(".gz"):
        return gzip.open(name, "rt", encoding="utf-8")
    if name.endswith(".bz2"):
        return bz2.open(name, "rt", encoding="utf-8")
    return open(name, encoding="utf-8")


def write_libsvm(path: str | os.PathLike, X, y) -> None:
    """Write rows X (dense or sparse) with integer labels y as a libsvm file (1-based, zeros left out)."""
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ConfigError("y", f"must be {X.shape[0]} labels (one per row of X), got shape {y.shape}")
    X.sort_indices()
    with open(path, "w", encoding="utf-8") as out:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            pairs = " ".join(f"{c + 1}:{v:.9g}" for c, v in zip(X.indices[lo:hi], X.data[lo:hi]) if v != 0)
            out.write(f"{int(y[i])} {pairs}\n".replace(" \n", "\n"))
