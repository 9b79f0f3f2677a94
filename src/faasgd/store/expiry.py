"""How long a job's keys live: every key a job writes expires `keep_s` after that key's last write.

    store.keep(job_id, 3600)        this store object writes the job's keys with a one-hour expiry
    store.keep_s_of(job_id)         the expiry it applies: kept, else the config record's, else 7 days
The rules every backend follows (keys.py lists the keys):
  * no write leaves a key without an expiry: a record, counter, event, chunk, copy or blob is written with
    the job's `keep_s` (Redis SET ... EX, or EXPIRE in the same MULTI after MSET, INCRBY and RPUSH;
    Memcached's expire, and `touch` after an incr; the memory store likewise), refreshed by each write;
  * a key with its own shorter expiry (leases, heartbeats, claims: `ttl_s`) keeps it, capped at `keep_s`;
  * where a store object learns a job's `keep_s`: `keep()` (the job's creator, before its first write),
    the job's config record when it is written, else that record read once (a warm replica's store
    serves many jobs and learns each job's on its first write), else DEFAULT_KEEP_S when the job has no
    config (a lost job's worker writing after the store restarted empty still writes expiring keys).
  * the keys a job reads throughout but writes seldom (`lasting_keys`: its config and meta records, `done`,
    the weights and their layout, the workers' records, the kept copies, the event log, the conflicts)
    are renewed to `keep_s` by a store object's write of the job once a quarter of `keep_s` has passed
    since its first write or last renewal (Redis: EXPIRE of those with less than half left, as an EXPIRE
    breaks a push's WATCH; Memcached: a `touch` each, which keeps the CAS), so they live `keep_s` past
    the job's last write rather than their own.
So a lost or forgotten job's keys are gone `keep_s` after its last write, and a finished job's result stays
readable that long. What is not renewed lives `keep_s` past its own last write: a blob, Memcached's event
items and push copies, leases and heartbeats.
"""

from __future__ import annotations

import time

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.store import codec, keys

MIN_KEEP_S = 1
MAX_KEEP_S = 30 * 24 * 3600  # memcached reads larger relative expiries as unix timestamps
DEFAULT_KEEP_S = 7 * 24 * 3600
MAX_KEPT_JOBS = 4096  # jobs whose keep_s one store object remembers (the oldest forgotten first, then re-read)
RENEW_EVERY = 4  # a store object renews a job's lasting keys every keep_s / RENEW_EVERY while it writes the job
# keep_s is at least this many start_timeout_s (faasgd.config.check_combination): nothing renews a job's keys
# between its setup's writes and its workers' first writes, and a worker may start start_timeout_s after the setup
# (later, it counts as lost) and renews them only a quarter of keep_s after its own first write. Twice
# start_timeout_s leaves it half of start_timeout_s from its start to that write (its shard loaded).
KEEP_PER_START = 2
LASTING_RECORDS = (keys.CONFIG, keys.JOB, keys.DONE, keys.RESULT, keys.LOST, keys.STATE)


def check_keep_s(value) -> int:
    """Return `value` if it is a whole number of seconds in [1, 30 days], else raise ConfigError('keep_s')."""
    return whole_number(value, "keep_s", low=MIN_KEEP_S, high=MAX_KEEP_S,
                        must=f"an integer number of seconds from {MIN_KEEP_S} to {MAX_KEEP_S} (30 days)")


class ExpiryMixin:
    """keep / keep_s_of, and `_expiry`, the one place a write's expiry is decided (mixed into ParameterStore,
    whose __init__ makes `_keep_by_job` and `_renewed_at`)."""

    _keep_by_job: dict[str, int]  # job -> keep_s, at most MAX_KEPT_JOBS (the oldest forgotten first, then re-read)
    _renewed_at: dict[str, float]  # job -> renew_clock() of this object's first write or last renewal

    def keep(self, job_id: str, keep_s: int) -> None:
        """Write job `job_id`'s keys with expiry `keep_s` from now on (ConfigError('keep_s') when out of range)."""
        keys.check_job_id(job_id)
        self._remember(job_id, check_keep_s(keep_s))

    def keep_s_of(self, job_id: str) -> int:
        """The expiry this store object writes job `job_id`'s keys with (reads its config record once)."""
        kept = self._keep_by_job.get(job_id)
        if kept is None:
            config = self.get_record(job_id, keys.CONFIG) or {}
            kept = self._remember(job_id, config_keep_s(config))
        return kept

    renew_clock = staticmethod(time.monotonic)  # when lasting keys are due for renewal (tests inject one)

    def _expiry(self, job_id: str, ttl_s: int = 0) -> int:
        """The expiry of one write of a job's key: its own `ttl_s` (0: none) capped at the job's keep_s.
        Renews the job's lasting keys first when that is due."""
        keep_s = self.keep_s_of(job_id)
        self._renew_if_due(job_id, keep_s)
        return min(ttl_s, keep_s) if ttl_s else keep_s

    def _renew_if_due(self, job_id: str, keep_s: int) -> None:
        now = self.renew_clock()
        last = self._renewed_at.setdefault(job_id, now)  # a first write: nothing is due yet
        if now - last < keep_s / RENEW_EVERY:
            return
        self._renewed_at[job_id] = now
        names = lasting_keys(job_id, self._meta.get(job_id), self.chunk_floats)
        with self._errors():
            self._touch(names, keep_s)

    def _learn(self, job_id: str, name: str, value: dict) -> None:
        """A config record about to be written names the job's keep_s: use it (checked before anything is written)."""
        if name == keys.CONFIG and isinstance(value, dict) and "keep_s" in value:
            self.keep(job_id, value["keep_s"])

    def _remember(self, job_id: str, keep_s: int) -> int:
        if job_id not in self._keep_by_job and len(self._keep_by_job) >= MAX_KEPT_JOBS:
            oldest = next(iter(self._keep_by_job))
            self._keep_by_job.pop(oldest)
            self._renewed_at.pop(oldest, None)
        self._keep_by_job[job_id] = keep_s
        return keep_s


def lasting_keys(job_id: str, meta: codec.WeightsMeta | None, chunk_floats: int) -> list[str]:
    """The keys a job reads throughout: its lasting records and event log, and with its weights' layout
    (`meta`, when the store object knows it) the weights, the workers' records and the kept copies."""
    names = [keys.record(job_id, name) for name in LASTING_RECORDS]
    names += [keys.events(job_id), keys.counter(job_id, keys.CONFLICTS)]
    if meta is None:
        return names
    names += [keys.weights_meta(job_id), keys.weights_version(job_id), *keys.weights_chunks(job_id, meta.chunks)]
    names += [keys.worker(job_id, w) for w in range(meta.writers)]
    copy_chunks = codec.WeightsMeta(meta.length, chunk_floats).chunks
    for copy in [keys.crossing_copy(w) for w in range(max(1, meta.writers))] + [keys.LAST_PARAMS_COPY]:
        names += [keys.model_meta(job_id, copy), *keys.model_chunks(job_id, copy, copy_chunks)]
    return names


def config_keep_s(config: dict) -> int:
    """The keep_s a job's config record names, or DEFAULT_KEEP_S (a config without one, or no config)."""
    value = config.get("keep_s", DEFAULT_KEEP_S)
    try:
        return check_keep_s(value)
    except ConfigError:
        return DEFAULT_KEEP_S
