"""Compressed pushes (config key `push_codec`): what a worker hands the store instead of its float32 update.

  f32            the accumulated update as it is: 4 bytes per parameter (the default, as before)
  f16            every entry as IEEE half precision: 2 bytes per parameter
  topk:FRACTION  only the ceil(FRACTION x n) entries of largest magnitude, as (uint32 index, float32 value)
                 pairs: 8 bytes per entry sent ("update only the changed parameters")

Error feedback (Seide et al. 2014, Lin et al.'s deep gradient compression 2018): the worker keeps a float32
residual of what its pushes left out. A push encodes x = update + residual; the residual becomes x minus
what the push carries. For top-k that is every entry not sent (exactly: the sent ones are x's own float32
values); for f16 it is each entry's rounding error (exact in float32), and whatever lies beyond half's
range (+-65504). So nothing is lost, only delayed: sum of pushed + residual = sum of updates.

The store checks a compressed push (`as_delta`: the float32 delta it stands for) and applies it by the job's
update rule with the same push id and record as a dense one. Where it is added:
  * Redis, top-k: inside Redis (redis_sparse.py), the pairs as they are, in one atomic call per push: the
    socket carries 8 bytes per entry, bit for bit the client-side add of the decoded delta by every rule
    (entries it does not carry are left as stored). A server without functions, or a push of more than
    redis_sparse.MAX_PAIRS entries, takes the client path below.
  * Redis f16 (and f32), and every push on Memcached and memory: on the client, as the decoded float32 delta, in
    the same transaction (Redis) or per-chunk cas (Memcached): a push reads and writes whole chunks on the wire,
    so the codec shrinks the update a worker hands over (`payload_bytes`, recorded per worker), not the socket's
    bytes. Memcached has no server-side add (no scripting, only incr/decr of integers).
docs/explanation/communication.md "Compressed pushes" has the measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from faasgd.errors import ConfigError

F16_MAX = float(np.finfo(np.float16).max)  # 65504: a larger entry is sent clipped, the rest stays residual
NAMES = "f32, f16 or topk:FRACTION with 0 < FRACTION < 1 (e.g. topk:0.01)"


@dataclass(frozen=True)
class Sparse:
    """A push of a few entries: the update is `values` at `indices`, 0 elsewhere, over `length` parameters."""

    length: int
    indices: np.ndarray  # uint32, sorted, unique, < length
    values: np.ndarray  # float32, finite, one per index

    @property
    def nbytes(self) -> int:
        return self.indices.size * (4 + 4)


@dataclass(frozen=True)
class Half:
    """A dense push in half precision."""

    values: np.ndarray  # float16, one per parameter

    @property
    def nbytes(self) -> int:
        return self.values.size * 2


@dataclass(frozen=True)
class PushCodec:
    """How a worker's pushes travel: parse it with `parse_codec`."""

    name: str = "f32"  # f32 | f16 | topk
    fraction: float = 1.0  # topk: the share of entries each push sends, in (0, 1)

    @property
    def compresses(self) -> bool:
        """Whether pushes leave something behind (a residual to keep)."""
        return self.name != "f32"

    def __str__(self) -> str:
        return f"topk:{self.fraction!r}" if self.name == "topk" else self.name  # repr: parses back to the same float

    def encode(self, update: np.ndarray, residual: np.ndarray):
        """Error feedback: `update` += `residual` (in place); returns what the push carries, and `residual`
        becomes the rest (in place). f32: the update itself, residual untouched (always zero)."""
        if self.name == "f32":
            return update
        update += residual
        if self.name == "f16":
            half = np.clip(update, -F16_MAX, F16_MAX).astype(np.float16)
            np.subtract(update, half.astype(np.float32), out=residual)
            return Half(half)
        n = update.size
        k = min(n, max(1, math.ceil(Fraction(repr(self.fraction)) * n)))  # the decimal's ceil: 0.07 x 100 is 7, not 8
        indices = np.sort(np.argpartition(np.abs(update), n - k)[n - k:]).astype(np.uint32)
        values = update[indices]  # a copy: exactly the float32 values of x
        residual[:] = update
        residual[indices] = 0.0
        return Sparse(n, indices, values)


def parse_codec(value) -> PushCodec:
    """`f32`, `f16` or `topk:FRACTION` (0 < FRACTION < 1) as a PushCodec; ConfigError naming push_codec."""
    text = value.strip().lower() if isinstance(value, str) else value
    if text in ("f32", "f16"):
        return PushCodec(text)
    if isinstance(text, str) and text.startswith("topk:"):
        try:
            fraction = float(text[5:])
        except ValueError:
            fraction = float("nan")
        if 0.0 < fraction < 1.0:
            return PushCodec("topk", fraction)
        raise ConfigError("push_codec", f"topk's FRACTION must be a number with 0 < FRACTION < 1 "
                                        f"(topk:1 would be f32 at twice the bytes), got {value!r}")
    raise ConfigError("push_codec", f"must be {NAMES}, got {value!r}")


def payload_bytes(payload) -> int:
    """Bytes of the update a push hands over: 4 per float32 entry, 2 per half, 8 per sparse pair."""
    return int(payload.nbytes)


def is_encoded(payload) -> bool:
    return isinstance(payload, (Sparse, Half))


def as_delta(payload, length: int) -> np.ndarray:
    """A compressed push as the float32 delta the store applies; ConfigError('delta') when it is not a valid one
    for a job of `length` parameters (checked before anything is written)."""
    if isinstance(payload, Half):
        values = payload.values
        if not isinstance(values, np.ndarray) or values.dtype != np.float16 or values.shape != (length,):
            raise ConfigError("delta", f"a half-precision push must be {length} float16 values, got "
                                       f"{getattr(values, 'shape', None)} {getattr(values, 'dtype', type(values).__name__)}")
        delta = values.astype(np.float32)
    else:
        indices, values = payload.indices, payload.values
        if payload.length != length:
            raise ConfigError("delta", f"a sparse push must be over the job's {length} values, got {payload.length}")
        if (not isinstance(indices, np.ndarray) or not isinstance(values, np.ndarray) or indices.ndim != 1
                or indices.shape != values.shape or indices.dtype != np.uint32 or values.dtype != np.float32):
            raise ConfigError("delta", "a sparse push needs as many uint32 indices as float32 values")
        if indices.size and (int(indices[-1]) >= length or (np.diff(indices.astype(np.int64)) <= 0).any()):
            raise ConfigError("delta", f"a sparse push's indices must be sorted, unique and below {length}")
        delta = np.zeros(length, np.float32)
        delta[indices] = values
    if not np.isfinite(delta).all():
        raise ConfigError("delta", "contains NaN or infinity; refusing to write it to the shared store")
    return delta
