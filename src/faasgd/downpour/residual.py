"""The error-feedback residual (store/push_codec.py) as part of a worker's checkpoint, kept once per call.

What a compressed push held back must reach a later push whoever makes it: the same call, the call a
hand-off chains, per-iteration's next epoch. So each call that ends cleanly leaves it with the checkpoint:

  1. pushes during a call name no residual (their record's `residual` is ""): they write nothing more
     than the push itself, so a compressed push costs on the wire what its codec says, plus the weights;
  2. at a clean end of the call (the drain before a hand-off, per-iteration's epoch end, the stop rule,
     the job's end: worker/invocation.py `train`, DownpourWorker.check_budget), once its last push has landed,
     the residual right after that push is written as a blob of its own (keys.residual_name: the worker, its
     push count and the invocation; never overwritten), then the worker's record (`update_worker`, never
     to fewer pushes) names it; refused (another invocation is further on), the blob is deleted;
  3. the blob a record named is deleted once a later push of the worker is applied (that push's record
     names none): one residual blob per worker at most, orphans only after crashes.

A call resumes from the blob its record names. A record naming none after pushes means the call that
made them ended without a clean end (killed, its lease taken over): the residual it held back since its
last clean end is dropped and the next call starts from zeros, counted as `residual_resets` in the worker's
record and the result. Mass is lost only there, never counted twice: a record names a residual only
together with the push count it was held back at, and nothing ever names a stale one (the blob named
by an earlier record is gone once a later push is applied, and a blob written by a call that is not
the one the store follows is refused with its record). Exactly what is dropped: the residual right after
the last applied push of the call that died (tests/unit/downpour/test_residual_carry.py checks it to the bit).
The invocation in the name keeps a stale call's blob (a call still running after a lease takeover) from
overwriting the winner's.

Why once per call and not with every push (the design before): a blob per push doubled the bytes a
compressed job sent (a float32 vector beside each push, larger than a topk or f16 push itself), which
defeats the codec; a crash is rare, a clean end is the rule (hand-offs, epochs), and what a crash drops
is bounded by what the codec held back, which error feedback would only have delivered later.
Not chosen either: the residual inside the record (a dense float32 vector in JSON that every fetch
reads with the weights, store/push.py `steps_of`). `f32` has no residual and writes nothing.
"""

from __future__ import annotations

import numpy as np

from faasgd.errors import StateLost
from faasgd.worker.budget import Superseded
from faasgd.store import ParameterStore


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


def push_then_drop(store: ParameterStore, job_id: str, push, previous: str):
    """`push()` (whose record names no residual); once it is applied, delete the `previous` residual blob (no
    record names it again: records never go back to fewer pushes). What the push returned."""
    outcome = push()
    if outcome.applied and previous:
        store.delete_blob(job_id, previous)
    return outcome


def keep(store: ParameterStore, job_id: str, worker_id: int, name: str, data: bytes, record: dict) -> bool:
    """At a clean end of a call: write the residual blob `name`, then the worker's `record` naming it. False
    when the store refuses the record (it holds more pushes, or a final record): the blob is deleted."""
    store.put_blob(job_id, name, data)
    if store.update_worker(job_id, worker_id, record):
        return True
    store.delete_blob(job_id, name)
    return False
