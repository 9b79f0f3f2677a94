"""Exactly-once pushes on Memcached, which has compare-and-set per key but no multi-key transaction.

Each weight chunk carries a header: which push number of each worker it already holds. A push with
id (worker w, number s):
  1. reads w's record, every writer's record, the version base and the chunks (one gets_many);
     stored pushes >= s: not applied again (store/push.py decides whose it was);
  2. writes a copy of itself (`p:{w}:meta` with s and the record, `p:{w}:{i}` the delta's chunks when it has
     more than one chunk: a push of one chunk is applied whole or not at all by step 3, see `write_copy`);
  3. adds its slice to every chunk whose header does not hold (w, s) yet, with cas; a chunk that
     changed meanwhile is re-read and retried, one that already holds (w, s) is left alone;
  4. completes by cas of w's record (pushes = s): that one key is the push's commit.
A crash between 2 and 4 leaves a half-applied push with its copy: `roll_forward` (run before the
worker resumes) applies the copy to the chunks still without (w, s) and commits the record, so the
push ends applied exactly once (a push of one chunk: commits the record if the chunk holds it, else
nothing was applied and nothing is done). A client retry after a timeout at any step redoes only what is
missing. The version is derived, not counted: `w:version` (pushes without ids, and a copy's base)
plus the `pushes` of every writer's record, so it can never drift from the sum of the pushes; the
steps the weights hold likewise (their `pushed_steps`, store/push.py), as of the push's first read.
Every item written (chunks, copies, records) carries the job's expiry (store/expiry.py), refreshed by each
write; a half-applied push's copy expires with the job's other keys.
What Memcached cannot promise: it may evict any key under memory pressure (size it with -m, as
docs/explanation/exactly-once.md says); a lost chunk, record or copy is reported as lost state, never silently rebuilt.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from faasgd.errors import JobNotFound, StateLost, StoreError
from faasgd.store import codec, keys
from faasgd.store.push import APPLY, LostRace, PushId, decide, pushes_of, steps_of



@dataclass(frozen=True)
class PushPort:
    """What this algorithm uses of its store, by name: the client (pymemcache's gets_many/set_many/gets/cas/add,
    or a Redis Cluster client speaking them) and the store's shared steps, so the module reads no private
    attribute of MemcachedStore and a store built otherwise (a pool, a cluster) gives the same face.
    MemcachedStore.push_port builds one per call (the client is the store's current one)."""

    url: str
    client: Any
    decode: Callable  # (parse, raw, what) -> parse(raw), its ValueError raised as StoreError naming `what`
    read_int: Callable[[bytes | None], "int | None"]  # a decimal counter's value, None when missing
    steps: Callable[[list], int]  # the minibatch steps the given raw worker records say were pushed
    expiry: Callable[[str], int]  # the job's expiry for a write, in seconds from now
    after_read: Callable[[str], None]  # the store's hook between a read and its writes (tests race there)
    added_into: Callable  # (job_id, old floats, delta, meta, chunk, target) -> the chunk's new float bytes
    until_won: Callable  # (attempt, job_id) -> (result, retries): attempt again on LostRace, bounded
    incr: Callable[[str, int, int], int]  # (key, by, ttl_s) -> the new value
    weights_meta: Callable[[str], codec.WeightsMeta]
    get_many: Callable[[list[str]], list]


_COUNT = struct.Struct("<I")
_PAIR = struct.Struct("<II")


def join(applied: dict[int, int], floats: bytes) -> bytes:
    """A chunk as stored: its header (worker -> highest push number held) then the float32 bytes."""
    pairs = b"".join(_PAIR.pack(w, s) for w, s in sorted(applied.items()))
    return _COUNT.pack(len(applied)) + pairs + floats


def split(raw: bytes) -> tuple[dict[int, int], memoryview]:
    """(header, float32 bytes) of a stored chunk, the bytes a view of `raw` (not a copy); ValueError when it is not
    one."""
    if raw is None or len(raw) < _COUNT.size:
        raise ValueError("weight chunk is missing or truncated (evicted?)")
    (count,) = _COUNT.unpack_from(raw)
    end = _COUNT.size + count * _PAIR.size
    if len(raw) < end:
        raise ValueError(f"weight chunk header declares {count} writers but is truncated")
    applied = dict(_PAIR.unpack_from(raw, _COUNT.size + k * _PAIR.size) for k in range(count))
    return applied, memoryview(raw)[end:]


def writer_keys(job_id: str, meta: codec.WeightsMeta) -> list[str]:
    return [keys.worker(job_id, w) for w in range(meta.writers)]


def version_of(port, base: bytes | None, records: list[bytes | None]) -> int:
    """`w:version` plus every writer's applied pushes."""
    total = port.read_int(base)
    if total is None:
        return None
    return total + sum(pushes_of(port.decode(codec.record_from_bytes, r, "worker record")) for r in records)


def push_with_id(port: PushPort, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId, record: dict,
                 out: np.ndarray | None = None):
    """Steps 1-4 above; (version, steps, chunks' float bytes, outcome, conflicts, retries). With `out` an applied
    push leaves the weights in it and gives None for the chunks (apply_chunks)."""
    client, worker_key = port.client, keys.worker(job_id, push_id.worker)
    others = [k for k in writer_keys(job_id, meta) if k != worker_key]
    chunk_keys = keys.weights_chunks(job_id, meta.chunks)
    found = client.gets_many([keys.weights_version(job_id), worker_key, *others, *chunk_keys])
    stored, token = found.get(worker_key, (None, None))
    stored_record = port.decode(codec.record_from_bytes, stored, "worker record")
    base = found.get(keys.weights_version(job_id), (None, None))[0]
    other_pushes = version_of(port, base, [found.get(k, (None, None))[0] for k in others])
    if other_pushes is None:
        raise JobNotFound(job_id)
    current = {i: found.get(k, (None, None)) for i, k in enumerate(chunk_keys)}
    other_steps = port.steps([found.get(k, (None, None))[0] for k in others])  # as of this read, like the version
    outcome = decide(stored_record, push_id, record)
    if outcome != APPLY:
        floats = [strip(port, job_id, current[i][0], i) for i in range(meta.chunks)]
        return (other_pushes + pushes_of(stored_record), other_steps + steps_of([stored_record]), floats, outcome,
                0, 0)
    write_copy(port, job_id, meta, delta, push_id, record)
    floats, conflicts, retries = apply_chunks(port, job_id, meta, delta, push_id, current, out)
    commit(port, worker_key, token, record, push_id, port.expiry(job_id))
    return other_pushes + push_id.seq, other_steps + steps_of([record]), floats, outcome, conflicts, retries


def write_copy(port: PushPort, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId, record: dict):
    """Step 2: the push's record, and its delta's chunks when it has more than one (`copied` says how many). A
    push of one chunk needs no copy of its delta: that one cas applies all of it or none, so a roll-forward only
    has to commit the record when the chunk holds the push, and nothing when it does not (the push then never
    happened: the worker's record is still the one before it, and the worker trains those steps again)."""
    copied = meta.chunks if meta.chunks > 1 else 0
    values = dict(zip(keys.pending_chunks(job_id, push_id.worker, copied), codec.encode_delta(delta, meta))) \
        if copied else {}
    values[keys.pending(job_id, push_id.worker)] = codec.record_to_bytes({"seq": push_id.seq, "record": record,
                                                                          "copied": copied})
    refused = port.client.set_many(values, expire=port.expiry(job_id), noreply=False)
    if refused:
        raise StoreError(port.url, f"memcached refused {len(refused)} keys of a push copy of job {job_id!r}")


def apply_chunks(port: PushPort, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId | None,
                 current: dict, out: np.ndarray | None = None):
    """Add the delta to every chunk not yet holding (worker, seq) (every chunk when there is no push id);
    (float bytes of every chunk, conflicts, retries). `current` maps chunk index -> (raw, cas token). With `out`
    (float32, the job's length) every chunk's weights as the push leaves them are written into it instead, each
    new chunk added there (codec.add_into) and stored from it, and the float bytes are None."""
    chunk_keys = keys.weights_chunks(job_id, meta.chunks)
    floats: list | None = [b""] * meta.chunks
    target = np.empty(meta.length, np.float32) if out is None else out
    seen = {"pending": list(range(meta.chunks)), "conflicts": 0, "first": True}
    ttl_s = port.expiry(job_id)

    def attempt() -> None:
        if not seen["first"]:
            found = port.client.gets_many([chunk_keys[i] for i in seen["pending"]])
            current.update({i: found.get(chunk_keys[i], (None, None)) for i in seen["pending"]})
        seen["first"] = False
        port.after_read(job_id)
        failed, writes = [], []
        for i in seen["pending"]:
            raw, token = current[i]
            if raw is None:
                raise StateLost(port.url, f"job {job_id!r}: weight chunk {i} is missing (evicted, or memcached restarted)")
            applied, old = port.decode(split, raw, f"job {job_id!r} weight chunk {i}")
            if push_id is not None and applied.get(push_id.worker, 0) >= push_id.seq:  # done by an earlier attempt
                floats[i] = old
                port.decode(lambda raw: codec.decode_chunk_into(raw, meta, i, target), old, f"job {job_id!r}")
                continue
            new = port.added_into(job_id, old, delta, meta, i, target)
            header = applied if push_id is None else {**applied, push_id.worker: push_id.seq}
            writes.append((i, new, (chunk_keys[i], join(header, new), token)))
        for (i, new, _), stored in zip(writes, cas_all(port.client, [w[2] for w in writes], ttl_s)):
            if stored is None:
                raise StateLost(port.url, f"job {job_id!r}: weight chunk {i} vanished during push_update")
            if stored:
                floats[i] = new
            else:
                failed.append(i)
        seen["pending"], seen["conflicts"] = failed, seen["conflicts"] + len(failed)
        if failed:
            raise LostRace

    _, retries = port.until_won(lambda: (attempt(),), job_id)
    if seen["conflicts"]:
        port.incr(keys.counter(job_id, keys.CONFLICTS), seen["conflicts"], ttl_s)
    return (floats if out is None else None), seen["conflicts"], retries


def cas_all(client, items: list[tuple], ttl_s: int) -> list:
    """cas of each (key, value, token) in order: by the client class's `cas_many` where it has one (a Redis
    Cluster's: one round trip per master), else one cas after another (None: gone, False: changed)."""
    if getattr(type(client), "cas_many", None) is not None:
        return client.cas_many(items, expire=ttl_s)
    return [client.cas(key, value, token, expire=ttl_s, noreply=False) for key, value, token in items]


def commit(port: PushPort, worker_key: str, token, record: dict, push_id: PushId, ttl_s: int) -> None:
    """Write the worker's record (pushes = seq), expiring `ttl_s` from now: the push's commit. Done already by
    a roll-forward is fine."""
    data = codec.record_to_bytes(record)
    for _ in range(100):
        done = port.client.add(worker_key, data, expire=ttl_s, noreply=False) if token is None else \
            port.client.cas(worker_key, data, token, expire=ttl_s, noreply=False)
        if done:
            return
        stored, token = port.client.gets(worker_key)
        if pushes_of(port.decode(codec.record_from_bytes, stored, "worker record")) >= push_id.seq:
            return  # committed by a roll-forward of this very push, or superseded: either way not ours to redo
    raise StoreError(port.url, f"{worker_key}: could not commit push {push_id.seq} (the record keeps changing)")


def roll_forward(port: PushPort, job_id: str, worker_id: int) -> None:
    """Finish worker `worker_id`'s half-applied push from its copy, if there is one."""
    meta = port.weights_meta(job_id)
    worker_key, pending_key = keys.worker(job_id, worker_id), keys.pending(job_id, worker_id)
    found = port.client.gets_many([worker_key, pending_key])
    stored, token = found.get(worker_key, (None, None))
    copy = port.decode(codec.record_from_bytes, found.get(pending_key, (None, None))[0], "push copy")
    stored_pushes = pushes_of(port.decode(codec.record_from_bytes, stored, "worker record"))
    if not copy or copy["seq"] != stored_pushes + 1:
        return  # nothing half-done: the last copy was committed (or there never was one)
    push_id = PushId(worker_id, copy["seq"])
    if copy.get("copied", meta.chunks) == 0:  # one chunk, no copy of the delta: committed where the chunk holds it
        (chunk,) = port.get_many(keys.weights_chunks(job_id, 1))
        if chunk is not None and port.decode(split, chunk, f"job {job_id!r} weight chunk 0")[0].get(
                worker_id, 0) >= push_id.seq:
            commit(port, worker_key, token, copy["record"], push_id, port.expiry(job_id))
        return
    raw = port.get_many(keys.pending_chunks(job_id, worker_id, meta.chunks))
    if any(r is None for r in raw):
        raise StateLost(port.url, f"job {job_id!r}: worker {worker_id}'s half-applied push {push_id.seq} and "
                                   f"part of its copy are gone")
    delta = port.decode(lambda r: codec.decode_delta(r, meta), raw, f"job {job_id!r} push copy")
    chunk_keys = keys.weights_chunks(job_id, meta.chunks)
    found = port.client.gets_many(chunk_keys)
    apply_chunks(port, job_id, meta, delta, push_id, {i: found.get(k, (None, None)) for i, k in enumerate(chunk_keys)})
    commit(port, worker_key, token, copy["record"], push_id, port.expiry(job_id))


def strip(port: PushPort, job_id: str, raw: bytes | None, index: int) -> bytes | None:
    return None if raw is None else port.decode(split, raw, f"job {job_id!r} weight chunk {index}")[1]
