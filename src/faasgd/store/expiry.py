"""How long a job's keys live: every key a job writes expires `keep_s` after that key's last write.

    store.keep(job_id, 3600)        this store object writes the job's keys with a one-hour expiry
    store.keep_s_of(job_id)         the expiry it applies: kept, else the config record's, else 7 days
The rules every backend follows (keys.py lists the keys):
  * no write leaves a key without an expiry: a record, counter, event, chunk, copy or blob is written with
    the job's `keep_s` (Redis SET ... EX, or PEXPIRE in the same MULTI after MSET, INCRBY and RPUSH;
    Memcached's expire, and `touch` after an incr; the memory store likewise), refreshed by each write;
  * a key with its own shorter expiry (leases, heartbeats, claims: `ttl_s`) keeps it, capped at `keep_s`;
  * where a store object learns a job's `keep_s`: `keep()` (the job's creator, before its first write),
    the job's config record when it is written, else that record read once (a warm replica's store
    serves many jobs and learns each job's on its first write), else DEFAULT_KEEP_S when the job has no
    config (a lost job's worker writing after the store restarted empty still writes expiring keys).
So a lost or forgotten job's keys are gone `keep_s` after its last write of each, and a finished job's
result stays readable `keep_s` after it was written. A key written once at a job's start (its config, its
weights' layout) expires `keep_s` after the start: `keep_s` must outlast the job's run.
"""

from __future__ import annotations

from faasgd.errors import ConfigError
from faasgd.store import keys

MIN_KEEP_S = 1
MAX_KEEP_S = 30 * 24 * 3600  # memcached reads larger relative expiries as unix timestamps
DEFAULT_KEEP_S = 7 * 24 * 3600
MAX_KEPT_JOBS = 4096  # jobs whose keep_s one store object remembers (the oldest forgotten first, then re-read)


def check_keep_s(value) -> int:
    """Return `value` if it is a whole number of seconds in [1, 30 days], else raise ConfigError('keep_s')."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_KEEP_S <= value <= MAX_KEEP_S:
        raise ConfigError("keep_s", f"must be an integer number of seconds from {MIN_KEEP_S} to {MAX_KEEP_S} "
                                    f"(30 days), got {value!r}")
    return value


class ExpiryMixin:
    """keep / keep_s_of, and `_expiry`, the one place a write's expiry is decided (mixed into ParameterStore)."""

    def keep(self, job_id: str, keep_s: int) -> None:
        """Write job `job_id`'s keys with expiry `keep_s` from now on (ConfigError('keep_s') when out of range)."""
        keys.check_job_id(job_id)
        self._remember(job_id, check_keep_s(keep_s))

    def keep_s_of(self, job_id: str) -> int:
        """The expiry this store object writes job `job_id`'s keys with (reads its config record once)."""
        kept = self._kept().get(job_id)
        if kept is None:
            config = self.get_record(job_id, keys.CONFIG) or {}
            kept = self._remember(job_id, config_keep_s(config))
        return kept

    def _expiry(self, job_id: str, ttl_s: int = 0) -> int:
        """The expiry of one write of a job's key: its own `ttl_s` (0: none) capped at the job's keep_s."""
        keep_s = self.keep_s_of(job_id)
        return min(ttl_s, keep_s) if ttl_s else keep_s

    def _learn(self, job_id: str, name: str, value: dict) -> None:
        """A config record about to be written names the job's keep_s: use it (checked before anything is written)."""
        if name == keys.CONFIG and isinstance(value, dict) and "keep_s" in value:
            self.keep(job_id, value["keep_s"])

    def _remember(self, job_id: str, keep_s: int) -> int:
        kept = self._kept()
        kept.pop(job_id, None)
        if len(kept) >= MAX_KEPT_JOBS:
            kept.pop(next(iter(kept)))
        kept[job_id] = keep_s
        return keep_s

    def _kept(self) -> dict[str, int]:
        if "_keep_by_job" not in self.__dict__:
            self._keep_by_job: dict[str, int] = {}
        return self._keep_by_job


def config_keep_s(config: dict) -> int:
    """The keep_s a job's config record names, or DEFAULT_KEEP_S (a config without one, or no config)."""
    value = config.get("keep_s", DEFAULT_KEEP_S)
    try:
        return check_keep_s(value)
    except ConfigError:
        return DEFAULT_KEEP_S
