"""The error-feedback residual (store/push_codec.py) as part of a worker's checkpoint: it outlives the call.

What a compressed push held back must reach a later push whoever makes it: the same call, the call a
hand-off chains, per-iteration's next epoch, or a call re-invoked after a kill or a lease takeover. So
the residual travels with the checkpoint, exactly once like the pushes, tied to the push id:

  1. before push s is sent, the residual right after it is written as a blob of its own, named for
     the worker, s and the invocation (`blob_name`): written once, never overwritten;
  2. push s carries the worker's record with `residual` = that name, written by the store in the same
     transaction / per-chunk cas as the add (store/push.py): the record names the residual of exactly
     the last applied push, whatever happened around it;
  3. once push s is applied the blob of push s - 1 is deleted (one residual per worker in the store);
     a push not applied (superseded) deletes its own.

A call resumes from the blob its record names (zeros when none: before the first push). Every crash
point is safe: a residual written whose push never applied is not named (the record still names
s - 1's, not yet deleted, and the steps of push s are trained again from that checkpoint); a push
applied whose older blob was not deleted leaves an orphan, never a wrong residual. The name carries the
invocation because two invocations of one worker (a stale call after a lease takeover) may both make
push s: the stale one is superseded, and its blob must not overwrite the winner's.

Not chosen: the residual inside the record (a dense float32 vector in JSON that every fetch reads with
the weights, store/push.py `steps_of`) or in the push's own transaction (each backend's push path, the
Memcached roll-forward included, would carry a second vector). The cost: each compressed push writes
one more float32 vector on the socket (4 bytes a parameter, off the critical path on the worker's
communication thread); `f32` has no residual and writes nothing more.
"""

from __future__ import annotations

import hashlib

import numpy as np

from faasgd.errors import StateLost
from faasgd.sgd.budget import Superseded
from faasgd.store import ParameterStore


def blob_name(worker_id: int, seq: int, owner: str) -> str:
    """The blob holding worker `worker_id`'s residual right after its push `seq` made by invocation `owner`."""
    return f"residual:{int(worker_id)}:{int(seq)}:{hashlib.sha256(owner.encode()).hexdigest()[:16]}"


def to_bytes(residual: np.ndarray) -> bytes:
    return residual.astype("<f4", copy=False).tobytes()


def load(store: ParameterStore, job_id: str, worker_id: int, name: str, out: np.ndarray) -> None:
    """Read the residual blob `name` (from the worker's record) into `out`.

    Absent while the stored record has moved past the one we resumed from: another invocation applied a
    push meanwhile (and deleted this blob), so this call is superseded. Absent otherwise: lost state."""
    data = store.get_blob(job_id, name)
    if data is None:
        stored = store.worker_record(job_id, worker_id) or {}
        if stored.get("residual") != name:
            raise Superseded(f"worker {worker_id}: another invocation pushed since this call resumed")
        raise StateLost(store.url, f"job {job_id!r}: worker {worker_id}'s residual {name!r} is gone (evicted?)")
    if len(data) != out.nbytes:
        raise StateLost(store.url, f"job {job_id!r}: residual {name!r} holds {len(data)} bytes, not {out.nbytes}")
    out[:] = np.frombuffer(data, "<f4")


def push_with(store: ParameterStore, job_id: str, worker_id: int, push, name: str, data: bytes, previous: str):
    """Write the residual blob `name`, then `push()` (whose record names it); once the push is applied, delete
    the `previous` residual blob (no record names it again: records never go back to fewer pushes). A push not
    applied deletes the one just written unless the stored record names it (an earlier attempt of this very
    push got through before another invocation took over: that one resumed from it). What the push returned."""
    store.put_blob(job_id, name, data)
    outcome = push()
    if not outcome.applied:
        if (store.worker_record(job_id, worker_id) or {}).get("residual") != name:
            store.delete_blob(job_id, name)
    elif previous and previous != name:
        store.delete_blob(job_id, previous)
    return outcome
