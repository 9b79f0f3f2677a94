"""Wire formats: weights as raw little-endian float32 chunks, records as JSON. Never pickle.

A stored chunk holds the weights of its span and, after them, the job's update-rule state for them
(adagrad: G; update_rule.py), `meta.rule.width` float32 values per weight in all. A push is added to
a chunk here, by the rule, in one place for every backend (`add_to_chunk`); reads decode the weights.

Decoding failures raise ValueError; the store turns them into StoreError naming its URL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.store.update_rule import SUM, UpdateRule

WIRE_DTYPE = np.dtype("<f4")  # what travels, on any host
DEFAULT_CHUNK_FLOATS = 131072  # 512 KiB per chunk: below memcached's default 1 MB item limit


@dataclass(frozen=True)
class WeightsMeta:
    """How a job's flat weight vector is laid out in chunks; fixed at set_weights."""

    length: int  # number of float32 values
    chunk_floats: int  # weights per chunk (the last chunk may be shorter); each stores rule.width x as many floats
    writers: int = 0  # workers that push with ids (Memcached derives the version from their records)
    rule: UpdateRule = SUM  # how pushes are added (update_rule.py); a meta without one reads as sum

    @property
    def chunks(self) -> int:
        return -(-self.length // self.chunk_floats)

    def span(self, index: int) -> slice:
        start = index * self.chunk_floats
        return slice(start, min(start + self.chunk_floats, self.length))

    def stored_bytes(self, index: int) -> int:
        """Bytes of chunk `index` as stored: its weights and the rule's state for them."""
        span = self.span(index)
        return (span.stop - span.start) * self.rule.width * WIRE_DTYPE.itemsize


def meta_to_bytes(meta: WeightsMeta) -> bytes:
    return json.dumps({"length": meta.length, "chunk_floats": meta.chunk_floats, "writers": meta.writers,
                       "dtype": "<f4", "rule": meta.rule.to_dict()}).encode()


def meta_from_bytes(raw: bytes) -> WeightsMeta:
    try:
        data = json.loads(raw)
        meta = WeightsMeta(int(data["length"]), int(data["chunk_floats"]), int(data.get("writers", 0)),
                           UpdateRule.from_dict(data.get("rule")))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"unreadable weight meta {raw[:80]!r}: {e}") from e
    if meta.length < 0 or meta.chunk_floats < 1 or meta.writers < 0 or data.get("dtype") != "<f4":
        raise ValueError(f"invalid weight meta {data!r}")
    return meta


def check_chunk_floats(chunk_floats: int) -> int:
    return whole_number(chunk_floats, "chunk_floats", low=1, must="a positive integer")


def as_vector(values, field: str, length: int | None = None) -> np.ndarray:
    """`values` as a finite 1-D float32 array (no copy when already one); ConfigError naming `field`."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise ConfigError(field, f"must be a 1-D array of numbers: {e}") from e
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ConfigError(field, f"must be a 1-D array of numbers, got shape {arr.shape} dtype {arr.dtype}")
    if length is not None and arr.size != length:
        raise ConfigError(field, f"must have the job's {length} values, got {arr.size}")
    arr = arr.astype(np.float32, copy=False)
    if not np.isfinite(arr).all():
        raise ConfigError(field, "contains NaN or infinity; refusing to write it to the shared store")
    return arr


def check_out(out: np.ndarray | None, length: int) -> np.ndarray:
    """`out` if it can receive `length` weights in place, a fresh buffer if None; else ConfigError('out')."""
    if out is None:
        return np.empty(length, dtype=np.float32)
    if (not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != (length,)
            or not out.flags.c_contiguous or not out.flags.writeable):
        shape = getattr(out, "shape", None)
        dtype = getattr(out, "dtype", type(out).__name__)
        raise ConfigError(
            "out", f"must be a writable contiguous float32 array of shape ({length},), got {shape} {dtype}"
        )
    return out


def encode_chunks(flat: np.ndarray, meta: WeightsMeta) -> list[bytes]:
    """Weights as stored chunks: each span's weights, then the rule's initial state (adagrad: G = 0)."""
    wire = flat.astype(WIRE_DTYPE, copy=False)
    return [meta.rule.zero_state(wire[meta.span(i)]).tobytes() for i in range(meta.chunks)]


def encode_delta(delta: np.ndarray, meta: WeightsMeta) -> list[bytes]:
    """A delta in the job's spans, plain float32 (no rule state): a push's copy on Memcached."""
    wire = delta.astype(WIRE_DTYPE, copy=False)
    return [wire[meta.span(i)].tobytes() for i in range(meta.chunks)]


def decode_delta(chunks: list[bytes | None], meta: WeightsMeta) -> np.ndarray:
    """The delta `encode_delta` wrote; ValueError if a chunk is missing or has the wrong size."""
    return decode_into(chunks, replace(meta, rule=SUM), np.empty(meta.length, np.float32))


def fits(chunks: list[bytes | None], meta: WeightsMeta) -> bool:
    """True when `chunks` are all present with the sizes `meta` implies."""
    return len(chunks) == meta.chunks and all(
        raw is not None and len(raw) == meta.stored_bytes(i) for i, raw in enumerate(chunks)
    )


def decode_into(chunks: list[bytes | None], meta: WeightsMeta, out: np.ndarray) -> np.ndarray:
    """Decode every chunk's weights into its slice of `out` (no intermediate buffer); ValueError if one is bad."""
    if len(chunks) != meta.chunks:
        raise ValueError(f"expected {meta.chunks} weight chunks, got {len(chunks)}")
    for i, raw in enumerate(chunks):
        decode_chunk_into(raw, meta, i, out)
    return out


def decode_chunk_into(raw: bytes | None, meta: WeightsMeta, index: int, out: np.ndarray) -> None:
    """Chunk `index`'s weights into their span of `out`; ValueError if it is missing or has the wrong size."""
    span = meta.span(index)
    out[span] = _chunk(raw, meta, index)[:span.stop - span.start]


def add_to_chunk(raw: bytes | None, delta: np.ndarray, meta: WeightsMeta, index: int) -> bytes:
    """Chunk `index` with its slice of `delta` applied by the job's update rule, as wire bytes."""
    total = meta.rule.apply(_chunk(raw, meta, index), delta[meta.span(index)])
    return total.astype(WIRE_DTYPE, copy=False).tobytes()


def add_into(raw: bytes | None, delta: np.ndarray, meta: WeightsMeta, index: int, out: np.ndarray) -> memoryview:
    """Chunk `index` with its slice of `delta` applied by the job's rule, as wire bytes, and its weights as the push
    leaves them in their span of `out` (float32, the job's length). With a rule that stores weights alone the bytes
    are a view of that span of `out` (nothing copied, nothing allocated); with one that stores state beside them
    (adagrad) a new buffer, whose weights are copied into `out`. ValueError if the chunk is missing or has the wrong
    size."""
    span = meta.span(index)
    stored = _chunk(raw, meta, index)
    if meta.rule.width == 1:
        chunk = meta.rule.apply_into(stored, delta[span], out[span])
    else:
        chunk = meta.rule.apply(stored, delta[span])
        out[span] = chunk[:span.stop - span.start]
    return memoryview(chunk).cast("B")


def _chunk(raw: bytes | None, meta: WeightsMeta, index: int) -> np.ndarray:
    expected = meta.stored_bytes(index)
    if raw is None:
        raise ValueError(f"weight chunk {index} is missing (evicted or deleted?)")
    if len(raw) != expected:
        raise ValueError(f"weight chunk {index} has {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=WIRE_DTYPE)


def record_to_bytes(value: dict) -> bytes:
    if not isinstance(value, dict):
        raise ConfigError("value", f"records are JSON objects (dict), got {type(value).__name__}")
    try:
        return json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError) as e:
        raise ConfigError("value", f"record is not JSON-serialisable: {e}") from e


def record_from_bytes(raw: bytes | None) -> dict | None:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"record is not JSON: {raw[:80]!r}") from e


def int_from_bytes(raw: bytes | int | None) -> int | None:
    """A decimal-ASCII counter as an int (None stays None)."""
    if raw is None or isinstance(raw, int):
        return raw
    try:
        return int(raw)
    except ValueError as e:
        raise ValueError(f"counter is not a decimal integer: {raw[:40]!r}") from e
