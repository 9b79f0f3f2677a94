"""A job's small JSON records, counters and event log: the part of the store API that is not weights.

Mixed into ParameterStore; each method validates, builds the key (keys.py), encodes (codec.py), decides
the write's expiry (expiry.py) and calls one backend primitive inside the store's `_errors()`, which maps
client exceptions.
"""

from __future__ import annotations

import abc

from faasgd.checks import whole_number
from faasgd.store import codec, keys


class RecordsMixin(abc.ABC):
    """Records (JSON objects), counters (integers that only grow) and an ordered event log per job."""

    def put_record(self, job_id: str, name: str, value: dict, ttl_s: int = 0) -> None:
        """Write JSON record `name` of a job; it expires after `ttl_s` (0: the job's keep_s, store/expiry.py)."""
        key, data, ttl = keys.record(job_id, name), codec.record_to_bytes(value), self._ttl(ttl_s)
        self._learn(job_id, name, value)
        ttl = self._expiry(job_id, ttl)
        with self._errors():
            self._put(key, data, ttl)

    def add_record(self, job_id: str, name: str, value: dict, ttl_s: int = 0) -> bool:
        """Create record `name` only if absent (atomically); True if this call created it."""
        key, data, ttl = keys.record(job_id, name), codec.record_to_bytes(value), self._ttl(ttl_s)
        self._learn(job_id, name, value)
        ttl = self._expiry(job_id, ttl)
        with self._errors():
            return self._add(key, data, ttl)

    def get_record(self, job_id: str, name: str) -> dict | None:
        """Record `name` of a job, or None when absent (or expired)."""
        return self.get_records(job_id, [name])[name]

    def get_records(self, job_id: str, names: list[str]) -> dict[str, dict | None]:
        """Several records in one round trip; absent ones map to None."""
        names = list(names)
        record_keys = [keys.record(job_id, n) for n in names]
        if not record_keys:
            return {}
        with self._errors():
            raw = self._get_many(record_keys)
        return {n: self._decode(codec.record_from_bytes, r, n) for n, r in zip(names, raw)}

    def delete_record(self, job_id: str, name: str) -> None:
        """Remove record `name` of a job; absent is fine."""
        key = keys.record(job_id, name)
        with self._errors():
            self._delete(key)

    def read_counter(self, job_id: str, name: str) -> int:
        """Counter `name` of a job (0 when it was never incremented)."""
        key = keys.counter(job_id, name)
        with self._errors():
            (raw,) = self._get_many([key])
        return self._int(raw) or 0

    def incr(self, job_id: str, name: str, by: int = 1) -> int:
        """Atomically add `by` (>= 0) to counter `name`, which starts at 0; return the new value."""
        whole_number(by, "by", low=0, must="a non-negative integer (memcached counters only grow)")
        key = keys.counter(job_id, name)
        ttl = self._expiry(job_id)
        with self._errors():
            return self._incr(key, by, ttl)

    def append_event(self, job_id: str, event: dict) -> None:
        """Append a JSON event to the job's ordered log."""
        keys.check_job_id(job_id)
        data = codec.record_to_bytes(event)
        ttl = self._expiry(job_id)
        with self._errors():
            self._append_event(job_id, data, ttl)

    def events(self, job_id: str, start: int = 0) -> list[dict]:
        """The job's events from index `start` on, oldest first."""
        keys.check_job_id(job_id)
        whole_number(start, "start", low=0, must="a non-negative integer")
        with self._errors():
            raw = self._events(job_id, start)
        return [self._decode(codec.record_from_bytes, r, "events") for r in raw]

    # ---- backend primitives (called inside self._errors()) ---------------------------------
    @abc.abstractmethod
    def _put(self, key: str, data: bytes, ttl_s: int) -> None:
        """Write `key`, expiring `ttl_s` (> 0) from now (a previous expiry is replaced, never dropped)."""

    @abc.abstractmethod
    def _add(self, key: str, data: bytes, ttl_s: int) -> bool:
        """Create `key` expiring `ttl_s` (> 0) from now unless it exists; True if this call created it."""

    @abc.abstractmethod
    def _delete(self, key: str) -> None: ...

    @abc.abstractmethod
    def _touch(self, names: list[str], ttl_s: int) -> None:
        """Make each of `names` that exists expire `ttl_s` from now (absent ones stay absent)."""

    @abc.abstractmethod
    def _incr(self, key: str, by: int, ttl_s: int) -> int:
        """Add `by` to the counter at `key` (created at 0), which then expires `ttl_s` from now."""

    @abc.abstractmethod
    def _append_event(self, job_id: str, data: bytes, ttl_s: int) -> None:
        """Append to the job's event log, which then expires `ttl_s` from now."""

    @abc.abstractmethod
    def _events(self, job_id: str, start: int) -> list[bytes]: ...
