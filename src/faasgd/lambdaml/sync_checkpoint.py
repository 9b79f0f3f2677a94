"""A synchronous worker's checkpoint blob, and KMeans' accuracy (sync_worker.py's helpers).

Checkpoint: after round r a worker writes its state (the parameters; admm [z | u_i | x_i]; kmeans the
centroids) as blob `sync-state:<worker>:<r mod 2>` (keys.sync_state_name) in the job's store, then its
record saying r rounds. Two slots: a crash between the two writes leaves the record at the previous round,
whose slot is untouched.
The blob is a 20-byte header (magic, the round, the float32 count) and the raw little-endian float32 values;
reading checks all three, so a blob of another round or length is StateLost, never values misread.
"""

from __future__ import annotations

import struct

import numpy as np

from faasgd import data
from faasgd.lambdaml import convex
from faasgd.errors import StateLost

_HEADER = struct.Struct("<4sQQ")  # magic, round, float32 count
MAGIC = b"FGSS"


def encode_state(rounds: int, params: np.ndarray) -> bytes:
    return _HEADER.pack(MAGIC, rounds, params.size) + params.astype("<f4", copy=False).tobytes()


def decode_state(raw: bytes | None, rounds: int, length: int, url: str, what: str) -> np.ndarray:
    """The state of `rounds` rounds in `raw` (`length` float32); StateLost naming `what` otherwise."""
    if raw is None or len(raw) < _HEADER.size:
        raise StateLost(url, f"{what}: its checkpoint is missing")
    magic, at, count = _HEADER.unpack_from(raw)
    if magic != MAGIC or at != rounds or count != length or len(raw) != _HEADER.size + 4 * count:
        raise StateLost(url, f"{what}: its checkpoint holds round {at}, {count} values; its record says round "
                             f"{rounds} of {length}")
    return np.frombuffer(raw, "<f4", count, _HEADER.size).astype(np.float32)


def cluster_accuracy(weights: np.ndarray, labelled: data.Shard, rows: data.Shard) -> float:
    """KMeans' accuracy: each cluster named by the majority label of its `labelled` rows (the validation rows),
    then the share of `rows` whose cluster's name is their label. `weights`: the nearest-centroid linear model."""
    k = convex.linear.bias_size(weights.size, labelled.x.shape[1])
    clusters = convex.linear.scores(weights, labelled.x).argmax(axis=1)
    names = np.zeros(k, np.int64)
    for c in range(k):
        labels = labelled.y[clusters == c]
        if labels.size:
            names[c] = np.bincount(labels).argmax()
    if not len(rows.y):
        return 0.0
    return float(np.mean(names[convex.linear.scores(weights, rows.x).argmax(axis=1)] == rows.y))
