"""What a round writes to the blob space: object names and the encoding of a slice of float32 values.

Names (built by faasgd.store.keys, never parsed back; the header below is what a reader checks):
    {tag}:r{round}:p{slice}of{slices}:w{writer}   worker `writer`'s contribution to one slice
    {tag}:r{round}:m{slice}of{slices}             the merged slice, written by that slice's merger
`reduce` is one slice (merged by worker 0); `reduce_scatter` is one slice per worker (slice i merged by worker i).

An object is a 48-byte little-endian header, then the values as raw little-endian float32 (no pickle):
    magic b"FGRP" (part) or b"FGRM" (merged), round, writer, slice, slices, total length, offset, count
Decoding checks every header field against what the reader expects and the byte count against `count`,
so an object of another round, another slicing or another vector length, a truncated or a foreign
object is a RoundDataError naming the object, never values silently misread. The empty object b"" is a
cleared one (exchange.py overwrites a round's objects with it two rounds later).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np

from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds.errors import RoundDataError
from faasgd.store import keys

_HEADER = struct.Struct("<4sQIIIQQQ")
HEADER_BYTES = _HEADER.size  # 48: every object's overhead, counted in the bytes a round moves
PART, MERGED = b"FGRP", b"FGRM"
CLEARED = b""
_TAG = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")


@dataclass(frozen=True)
class Piece:
    """One object's identity: which round, slice and writer, and where its values sit in the vector."""

    kind: bytes  # PART or MERGED
    round_no: int
    writer: int  # the contributing worker (PART) or the slice's merger (MERGED)
    slice_index: int
    slices: int
    total: int  # the whole vector's length
    offset: int  # the slice's first index in the vector
    count: int  # the slice's length

    def name(self, tag: str) -> str:
        if self.kind == PART:
            return keys.round_part_name(tag, self.round_no, self.slice_index, self.slices, self.writer)
        return keys.round_merged_name(tag, self.round_no, self.slice_index, self.slices)

    def nbytes(self) -> int:
        return HEADER_BYTES + 4 * self.count


def check_tag(tag: str) -> str:
    """Return `tag` if it is 1-32 characters of [A-Za-z0-9_-], else ConfigError('tag')."""
    if not isinstance(tag, str) or not _TAG.match(tag):
        raise ConfigError("tag", f"must be 1-32 characters of [A-Za-z0-9_-], got {tag!r}")
    return tag


def split(length: int, slices: int) -> list[tuple[int, int]]:
    """(offset, count) of `slices` contiguous slices covering `length` values; the first length % slices get one more."""
    base, extra = divmod(length, slices)
    bounds, offset = [], 0
    for i in range(slices):
        count = base + (i < extra)
        bounds.append((offset, count))
        offset += count
    return bounds


def encode(piece: Piece, values: np.ndarray) -> bytes:
    """The object for `piece` holding `values` (float32, `piece.count` of them)."""
    if values.dtype != np.float32 or values.shape != (piece.count,):
        raise ValueError(f"piece of {piece.count} float32 values, got {values.dtype} {values.shape}")
    header = _HEADER.pack(piece.kind, piece.round_no, piece.writer, piece.slice_index, piece.slices,
                          piece.total, piece.offset, piece.count)
    return header + values.astype("<f4", copy=False).tobytes()


def decode(raw: bytes, piece: Piece, name: str) -> np.ndarray:
    """The values of object `name`, checked against the `piece` the reader expects (RoundDataError if not)."""
    def bad(detail: str) -> RoundDataError:
        return RoundDataError(piece.round_no, name, piece.writer, detail)

    if len(raw) == 0:
        raise bad("it was already cleared (a round's objects are cleared two rounds later: "
                  "a worker re-entered a round the others had long passed?)")
    if len(raw) < HEADER_BYTES or raw[:4] not in (PART, MERGED):
        raise bad(f"not a rounds object ({len(raw)} bytes starting {raw[:8]!r})")
    found = Piece(*_HEADER.unpack_from(raw))
    if found != piece:
        raise bad(f"holds {_describe(found)}, expected {_describe(piece)}")
    if len(raw) != piece.nbytes():
        raise bad(f"holds {len(raw) - HEADER_BYTES} bytes of values, expected {4 * piece.count} "
                  f"({piece.count} float32)")
    return np.frombuffer(raw, dtype="<f4", count=piece.count, offset=HEADER_BYTES).astype(np.float32, copy=False)


def _describe(p: Piece) -> str:
    kind = {PART: "a contribution", MERGED: "a merged slice"}.get(p.kind, repr(p.kind))
    return (f"{kind} of round {p.round_no} by worker {p.writer}, slice {p.slice_index} of {p.slices} "
            f"(values {p.offset}..{p.offset + p.count} of {p.total})")
