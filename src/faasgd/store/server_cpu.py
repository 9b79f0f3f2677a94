"""The store servers' own CPU-seconds, as they count them: a job's `store_cpu_s` is their difference over its span.

Mixed into ParameterStore; a backend reads its servers' counts (`_server_cpu_s`, inside the store's `_errors()`):
- Redis: `INFO cpu`, used_cpu_user + used_cpu_sys (the server process's own rusage, every thread of it; its
  forked children, a background save's, are left out);
- Memcached: `stats`, rusage_user + rusage_system (the same, as memcached reports it);
- a Memcached pool, a Redis Cluster: the sum over every server (a cluster's replicas too); None when any one of
  them does not report it;
- the memory store (its "server" is the caller's process, whose CPU is already the caller's) and any store that
  cannot tell: None.
A server's count is all of its CPU, whoever asked for it: another job on the same server at the same time is in
the difference too. A server that does not answer raises the store's error (StoreUnavailable, StoreTimeout), as any
call does; None says only that the server answered without a count.
"""

from __future__ import annotations

from typing import Iterable, Mapping


class ServerCpuMixin:
    """server_cpu_s: the store servers' CPU-seconds so far, by their own count."""

    def server_cpu_s(self) -> float | None:
        """CPU-seconds the store's servers have used since they started (user + system), or None when they do not
        say (see the module's docstring for each backend)."""
        with self._errors():
            return self._server_cpu_s()

    def _server_cpu_s(self) -> float | None:
        """The backend's reading; None: its servers keep no count it can read."""
        return None


def redis_cpu_s(info: Mapping) -> float | None:
    """used_cpu_user + used_cpu_sys of one Redis server's `INFO cpu` (None when it lacks them)."""
    return _sum_of(info, ("used_cpu_user", "used_cpu_sys"))


def memcached_cpu_s(stats: Mapping) -> float | None:
    """rusage_user + rusage_system of one memcached's `stats` (keys as bytes or text; None when it lacks them)."""
    return _sum_of(stats, ("rusage_user", "rusage_system"))


def total(readings: Iterable[float | None]) -> float | None:
    """The sum of several servers' readings; None when any is None, or there are none."""
    values = list(readings)
    return None if not values or any(v is None for v in values) else float(sum(values))


def _sum_of(values: Mapping, names: tuple[str, ...]) -> float | None:
    found = [values.get(name, values.get(name.encode())) for name in names]
    if any(value is None for value in found):
        return None
    try:
        return sum(float(value.decode() if isinstance(value, bytes) else value) for value in found)
    except (TypeError, ValueError):
        return None
