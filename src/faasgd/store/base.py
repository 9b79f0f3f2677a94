"""The ParameterStore interface and the logic every backend shares.

Public methods validate their arguments, build keys (keys.py), encode values (codec.py) and call a
few backend primitives inside `self._errors()`, the one place where a backend maps its client's
exceptions to StoreUnavailable / StoreTimeout / StoreError. A public method never lets a raw backend
exception out. The parts that are not weights are mixed in: records (records.py), blobs (blobs.py),
kept copies of parameters (copies.py), the clocks (clock.py), every write's expiry (expiry.py) and the servers'
own CPU count (server_cpu.py).

Concurrency contract of push_update: every call adds its delta exactly once (no lost update). How
a backend achieves it (optimistic transaction, per-chunk CAS, lock) is in its module docstring.
A push returns what it saw (`Push`: the new version, the races it lost, its retries), so counts
belong to the caller that pushed, never to a client shared by several workers. The store also keeps
a per-job counter `conflicts`, added to with each push's own conflicts (atomically with the push on
Redis and memory), so a job's conflicts can be checked against the store.
"""

from __future__ import annotations

import abc
import contextlib
import time
from dataclasses import replace
from typing import Callable

import numpy as np

from faasgd.checks import whole_number
from faasgd.errors import ConfigError, FaasgdError, JobNotFound, StateLost, StoreConflict, StoreError
from faasgd.retry import PUSH_CONFLICT, retry_call
from faasgd.store import codec, keys, push_codec
from faasgd.store.blobs import BlobsMixin
from faasgd.store.clock import ClockMixin
from faasgd.store.copies import CopiesMixin
from faasgd.store.expiry import MAX_KEEP_S, ExpiryMixin
from faasgd.store.push import LostRace, Push, PushId, Snapshot, check_record, may_replace, steps_of
from faasgd.store.records import RecordsMixin
from faasgd.store.server_cpu import ServerCpuMixin
from faasgd.store.update_rule import SUM, UpdateRule

MAX_TTL_S = MAX_KEEP_S  # memcached reads larger expiries as unix timestamps


def writer_keys(job_id: str, meta: codec.WeightsMeta) -> list[str]:
    """The records of the workers that push with ids (their `pushes` and `pushed_steps` count)."""
    return [keys.worker(job_id, w) for w in range(meta.writers)]


class ParameterStore(RecordsMixin, BlobsMixin, CopiesMixin, ClockMixin, ExpiryMixin, ServerCpuMixin, abc.ABC):
    """A job's parameters (chunked float32 weights + version) and small JSON records, in a shared store."""

    def __init__(
        self,
        url: str,
        client,  # the backend's client object (redis.Redis, a pymemcache client, a MemorySpace)
        *,
        chunk_floats: int = codec.DEFAULT_CHUNK_FLOATS,  # values per weight chunk, fixed per job at set_weights
        max_retries: int = 200,  # conflicting attempts of one push_update before StoreConflict
        retry_deadline_s: float = 30.0,  # wall-clock bound on one push_update's retries
    ):
        self.url = url  # masked: safe in every message
        self.client = client
        self.chunk_floats = codec.check_chunk_floats(chunk_floats)
        self.conflict_policy = replace(PUSH_CONFLICT, deadline_s=retry_deadline_s, max_attempts=max_retries + 1)
        self._meta: dict[str, codec.WeightsMeta] = {}  # per job; never changes once written
        self._keep_by_job: dict[str, int] = {}  # per job: its keys' expiry (expiry.py)
        self._renewed_at: dict[str, float] = {}  # per job: when its lasting keys were last renewed (expiry.py)
        # Test hook: called with job_id between the read and the conditional write of push_update,
        # so a test can make another client write there and provoke a real conflict.
        self._after_read_hook: Callable[[str], None] | None = None

    # ---- weights ---------------------------------------------------------------------------
    def ping(self) -> None:
        """Check the store answers; raise StoreUnavailable / StoreTimeout naming the URL."""
        with self._errors():
            self._ping()

    def set_weights(self, job_id: str, flat: np.ndarray, version: int = 0, writers: int = 0,
                    rule: UpdateRule = SUM) -> None:
        """Initialise a job's weights (any length, stored as float32) and set its version (default 0).

        A version other than 0 is for copies: a node-local cache records which global version it holds.
        `writers`: how many workers will push with push ids (their records count in the version).
        `rule`: how pushes are added (store/update_rule.py), fixed for the job; its state starts at zero.
        A rule storing more per weight (adagrad: [w | G]) gets proportionally fewer weights per chunk,
        so a stored chunk never outgrows chunk_floats floats.
        """
        keys.check_job_id(job_id)
        for name, value in (("version", version), ("writers", writers)):
            whole_number(value, name, low=0)
        if not isinstance(rule, UpdateRule):
            raise ConfigError("update_rule", f"must be an UpdateRule, got {type(rule).__name__}")
        data = codec.as_vector(flat, "flat")
        meta = codec.WeightsMeta(data.size, self._chunk_floats(job_id, data.size, rule), writers, rule)
        ttl = self._expiry(job_id)
        with self._errors():
            self._write_weights(job_id, codec.meta_to_bytes(meta), codec.encode_chunks(data, meta), version, ttl)
        self._meta[job_id] = meta

    def get_weights(self, job_id: str, out: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """(weights, version): a consistent snapshot on Redis and memory, see memcached_store otherwise.

        With `out` (float32, the job's length) the weights are decoded into it; no new buffer.
        """
        weights, snapshot = self._fetch(job_id, out, steps=False)
        return weights, snapshot.version

    def fetch(self, job_id: str, out: np.ndarray | None = None) -> Snapshot:
        """Read the weights (into `out`, as get_weights) with their version and the minibatch steps they hold
        (the writers' records, read in the same round trip): what a worker measures staleness in steps from."""
        return self._fetch(job_id, out, steps=True)[1]

    def _fetch(self, job_id: str, out: np.ndarray | None, steps: bool) -> tuple[np.ndarray, Snapshot]:
        meta = self._weights_meta(job_id)
        version, held, chunks = self._read_weights(job_id, meta, steps)
        if not codec.fits(chunks, meta):  # re-initialised with another layout since we cached it?
            meta = self._weights_meta(job_id, fresh=True)
            version, held, chunks = self._read_weights(job_id, meta, steps)
        if any(c is None for c in chunks):
            raise StateLost(self.url, f"job {job_id!r}: weight chunks missing (evicted, or the store restarted)")
        target = codec.check_out(out, meta.length)
        weights = self._decode(lambda c: codec.decode_into(c, meta, target), chunks, f"job {job_id!r}")
        return weights, Snapshot(version, held)

    def push_update(self, job_id: str, delta: np.ndarray, out: np.ndarray | None = None, *,
                    push_id: PushId | None = None, record: dict | None = None) -> Push:
        """Atomically add `delta` to the job's weights (by its update rule) and bump its version; return
        what the push saw.

        With `push_id` (and the worker's `record`, with `pushes` == push_id.seq and an `owner`) the
        push is applied exactly once and the record is written with it (store/push.py). With `out`
        (float32, the job's length) the weights as the push left them are decoded into it: a fetch
        of the new version without another round trip (untouched when the push was not applied).
        `delta` may be compressed (store/push_codec.py: half precision, or sparse index/value pairs): it is
        decoded into the float32 delta it stands for and applied as that, by every rule and backend alike.
        """
        meta = self._weights_meta(job_id)
        data = push_codec.as_delta(delta, meta.length) if push_codec.is_encoded(delta) else \
            codec.as_vector(delta, "delta", meta.length)
        target = None if out is None else codec.check_out(out, meta.length)
        if push_id is not None:
            check_record(push_id, record)
        with self._errors():
            push, chunks = self._push_payload(job_id, meta, delta, data, push_id, record, target)
        if target is not None and push.applied and chunks is not None:  # None: the backend added into `target`
            self._decode(lambda c: codec.decode_into(c, meta, target), chunks, f"job {job_id!r}")
        return push

    def worker_record(self, job_id: str, worker_id: int) -> dict | None:
        """Worker `worker_id`'s record (progress and checkpoint), or None before its first write."""
        return self.get_record(job_id, keys.progress_name(worker_id))

    def update_worker(self, job_id: str, worker_id: int, record: dict) -> bool:
        """Write a worker's record between pushes (progress, an epoch's end, the end) unless the stored one
        is further on (more pushes, or final): False then, and nothing is written (store/push.py)."""
        key, data, ttl = keys.worker(job_id, worker_id), codec.record_to_bytes(record), self._expiry(job_id)
        with self._errors():
            return self._update_worker(key, data, lambda stored: may_replace(stored, record), ttl)

    def recover_worker(self, job_id: str, worker_id: int) -> None:
        """Finish a push of this worker that a crash left half-applied (Memcached; elsewhere pushes are
        all-or-nothing). Called before a worker resumes from its record."""

    def reopen(self) -> "ParameterStore":
        """Another store object on the same store, with a client of its own (for another thread)."""
        if getattr(self, "_reopen", None) is None:
            return self  # a store on an injected client (tests): that client is all there is
        other = self._reopen()
        other._keep_by_job.update(self._keep_by_job)  # the jobs' expiries this object was told (expiry.py)
        return other

    def authoritative(self) -> "ParameterStore":
        """The store holding the authoritative parameters: itself (a cache in front of it returns the store behind)."""
        return self

    def close(self) -> None:
        """Release the client's connections; the store object is not used afterwards."""
        with self._errors():
            self._close()

    def __enter__(self) -> "ParameterStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # ---- shared helpers for backends -------------------------------------------------------
    def _weights_meta(self, job_id: str, fresh: bool = False) -> codec.WeightsMeta:
        """The job's chunk layout: read once, then cached (it never changes for a job)."""
        keys.check_job_id(job_id)
        if not fresh and job_id in self._meta:
            return self._meta[job_id]
        with self._errors():
            (raw,) = self._get_many([keys.weights_meta(job_id)])
        if raw is None:
            raise JobNotFound(job_id)
        meta = self._decode(codec.meta_from_bytes, raw, job_id)
        self._read_meta(job_id, raw, meta)
        self._meta[job_id] = meta
        return meta

    def _read_meta(self, job_id: str, raw: bytes, meta: codec.WeightsMeta) -> None:
        """What a backend learns from a job's weight meta as it is read (the cluster: where each chunk lives)."""

    def _read_weights(self, job_id: str, meta: codec.WeightsMeta,
                      steps: bool = False) -> tuple[int, int | None, list[bytes | None]]:
        """(version, steps or None, raw chunks) in one round trip (with the writers' records when `steps`);
        JobNotFound when the version is gone."""
        writers = writer_keys(job_id, meta) if steps else []
        names = [keys.weights_version(job_id), *writers, *keys.weights_chunks(job_id, meta.chunks)]
        with self._errors():
            raw = self._get_many(names)
        version = self._int(raw[0])
        if version is None:
            self._meta.pop(job_id, None)
            raise JobNotFound(job_id)
        held = self._steps(raw[1:1 + len(writers)]) if steps else None
        return version, held, raw[1 + len(writers):]

    def _chunk_floats(self, job_id: str, length: int, rule: UpdateRule) -> int:
        """Weights per chunk of a new job: chunk_floats over the rule's width (a store of several servers
        chooses its own, to spread the chunks over them)."""
        return max(1, self.chunk_floats // rule.width)

    def _steps(self, records: list[bytes | None]) -> int:
        """Minibatch steps the writers' raw records say their applied pushes hold (push.steps_of)."""
        return steps_of([self._decode(codec.record_from_bytes, r, "worker record") for r in records])

    def _added_into(self, job_id: str, raw: bytes | None, delta: np.ndarray, meta: codec.WeightsMeta, index: int,
                    out: np.ndarray) -> memoryview:
        """codec.add_into: chunk `index` plus `delta` as wire bytes, its weights in `out`; StoreError if it is bad."""
        try:
            return codec.add_into(raw, delta, meta, index, out)
        except ValueError as e:
            raise StoreError(self.url, f"job {job_id!r}: {e}") from e

    def _added(self, job_id: str, raw: bytes | None, delta: np.ndarray, meta: codec.WeightsMeta, index: int) -> bytes:
        """Chunk `index` of a job plus its slice of `delta`, as wire bytes; StoreError if the chunk is bad."""
        try:
            return codec.add_to_chunk(raw, delta, meta, index)
        except ValueError as e:
            raise StoreError(self.url, f"job {job_id!r}: {e}") from e

    def _after_read(self, job_id: str) -> None:
        if self._after_read_hook is not None:
            self._after_read_hook(job_id)

    def _push_payload(self, job_id: str, meta: codec.WeightsMeta, payload, delta: np.ndarray,
                      push_id: PushId | None, record: dict | None, out: np.ndarray | None) -> tuple[Push, list | None]:
        """Apply a push handed over as `payload` (as given: float32, or compressed) whose float32 delta is `delta`;
        `out`: where the caller wants the weights (None: it does not). Here `_push` of the delta, whose chunks
        push_update decodes into `out`; a backend may write `out` itself and return None for the chunks
        (redis_store.py), or add some payloads on the server (redis_store.py: sparse ones)."""
        return self._push(job_id, meta, delta, push_id, record, out)

    def _until_won(self, attempt: Callable[[], tuple], job_id: str) -> tuple[tuple, int]:
        """Run a push `attempt` until it raises no LostRace, under the conflict policy: (its result, retries).

        Past the policy's attempts or deadline: StoreConflict naming the job.
        """
        started, attempts = time.monotonic(), [0]

        def counted() -> tuple:
            attempts[0] += 1
            return attempt()

        try:
            return retry_call(counted, self.conflict_policy, (LostRace,)), attempts[0] - 1
        except LostRace:
            raise StoreConflict(self.url, f"push_update of job {job_id!r} still conflicting after "
                                          f"{attempts[0] - 1} retries in {time.monotonic() - started:.1f}s") from None

    def _int(self, raw) -> int | None:
        return self._decode(codec.int_from_bytes, raw, "counter")

    def _decode(self, decode, raw, what: str):
        try:
            return decode(raw)
        except ValueError as e:
            raise StoreError(self.url, f"{what}: {e}") from e

    @staticmethod
    def _ttl(ttl_s: int) -> int:
        return whole_number(ttl_s, "ttl_s", low=0, high=MAX_TTL_S, must=f"an integer 0 (the job's keep_s) to {MAX_TTL_S}")

    @contextlib.contextmanager
    def _errors(self):
        """Turn the client's exceptions into StoreErrors naming the URL; faasgd errors pass as they are,
        and anything `_map` does not know is a bug, raised as it is."""
        try:
            yield
        except FaasgdError:
            raise
        except Exception as error:
            mapped = self._map(error)
            if mapped is None:
                raise
            raise mapped from error

    # ---- backend primitives (called inside self._errors()) ---------------------------------
    @abc.abstractmethod
    def _map(self, error: BaseException, detail: str = "") -> StoreError | None:
        """The StoreError for one of this backend's client exceptions (its one mapping table), else None."""

    @abc.abstractmethod
    def _ping(self) -> None: ...

    @abc.abstractmethod
    def _server_time(self) -> float:
        """The server's clock (seconds since the epoch)."""

    @abc.abstractmethod
    def _write_weights(self, job_id: str, meta: bytes, chunks: list[bytes], version: int, ttl_s: int) -> None:
        """Write meta, all chunks and the version, each expiring `ttl_s` from now; a concurrent push must not
        survive it half-applied."""

    @abc.abstractmethod
    def _push(self, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId | None,
              record: dict | None, out: np.ndarray | None = None) -> tuple[Push, list | None]:
        """Add `delta` once (lost races redone with `_until_won`; with a push id, exactly once, the record
        written with it); (what it saw, the weights' chunks as the push left them, or None when it wrote those
        weights into `out` itself: a backend may, or may leave `out` to push_update). Every key it writes
        expires `self._expiry(job_id)` from now."""

    @abc.abstractmethod
    def _update_worker(self, key: str, data: bytes, allowed, ttl_s: int) -> bool:
        """Replace the record at `key` with `data` (expiring `ttl_s` from now) if `allowed(stored record or
        None)`, atomically."""

    @abc.abstractmethod
    def _get_many(self, names: list[str]) -> list[bytes | None]:
        """Values of `names` in order, in one round trip (atomically where the backend can)."""

    @abc.abstractmethod
    def _close(self) -> None: ...

