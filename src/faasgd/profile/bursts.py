"""Driple's three figures of a resource series: burst duration, idle duration, burst consumption.

A series is sampled at a fixed period; each sample is the mean over the period before it. A sample is
*in a burst* when its value exceeds the series' threshold (THRESHOLDS; memory's is relative to the
call's first sample). A burst is a maximal run of burst samples; an idle period a maximal run of other
samples *between two bursts* (the head before the first burst, loading, and the tail after the last
are neither). Then, over all bursts and idle periods:
    burst_s   mean burst duration (s)           idle_s  mean idle duration (s; None: no idle period)
    burst_use mean value during bursts (the consumption: cores, MB or bytes/s; None: no burst)
plus the series' total (its integral: CPU seconds, bytes; for memory MB x s, not reported) and peak.

`Bursts` accumulates a series one sample at a time in O(1), and its `stats()` are additive: a worker's
calls (per-iteration mode, hand-offs) and a job's workers are merged by adding them (`merge`), so a
worker record and a job result carry the stats, never the series. A burst cut by a call's end counts
as a burst of its own; the idle run after a call's last burst is a tail, not counted.
"""

from __future__ import annotations

from typing import Any, Iterable

SERIES = ("cpu", "rss", "tx", "rx")  # CPU (cores), resident memory (MB), store bytes sent / received (bytes/s)
# A sample is in a burst above these. cpu: more than half a core busy. rss: more than 16 MB above the RSS
# when the call began (memory the call added: its shard, buffers). tx / rx: above 64 KiB/s, i.e. more than
# 6.5 KB in a 0.1 s sample, which a records-and-heartbeats sample never reaches and a weight transfer of any
# model above ~1600 parameters always does.
THRESHOLDS = {"cpu": 0.5, "rss": 16.0, "tx": 65536.0, "rx": 65536.0}
RELATIVE = {"rss"}  # thresholds above the series' first sample
STAT_KEYS = ("time", "integral", "peak", "bursts", "burst_time", "burst_integral", "idles", "idle_time")


class Bursts:
    """One series' burst and idle runs, totals and peak, fed sample by sample."""

    def __init__(self, threshold: float, relative: bool = False) -> None:
        self.threshold, self.relative = threshold, relative
        self.stats = dict.fromkeys(STAT_KEYS, 0.0)
        self.stats["peak"] = None
        self._level: float | None = None if relative else threshold
        self._in_burst = False
        self._seen_burst = False
        self._idle_run = 0.0  # the idle run since the last burst (counted once a burst ends it)

    def add(self, value: float, dt: float) -> None:
        """One sample: the mean `value` over the `dt` seconds before it."""
        stats = self.stats
        if self._level is None:
            self._level = value + self.threshold
        stats["time"] += dt
        stats["integral"] += value * dt
        stats["peak"] = value if stats["peak"] is None else max(stats["peak"], value)
        if value > self._level:
            if not self._in_burst:
                stats["bursts"] += 1
                if self._seen_burst:  # the idle run just ended lay between two bursts
                    stats["idles"] += 1
                    stats["idle_time"] += self._idle_run
            self._in_burst = self._seen_burst = True
            self._idle_run = 0.0
            stats["burst_time"] += dt
            stats["burst_integral"] += value * dt
        else:
            self._in_burst = False
            self._idle_run += dt


def merge(all_stats: Iterable[dict | None]) -> dict:
    """Stats of several calls or workers of one series, added (peaks: the largest)."""
    out = dict.fromkeys(STAT_KEYS, 0.0)
    out["peak"] = None
    for stats in all_stats:
        for key in STAT_KEYS:
            value = (stats or {}).get(key)
            if value is None:
                continue
            if key == "peak":
                out["peak"] = value if out["peak"] is None else max(out["peak"], value)
            else:
                out[key] += value
    return out


def figures(stats: dict) -> dict:
    """Driple's three figures of merged stats: {"burst_s", "idle_s", "burst_use"} (None where undefined)."""
    bursts, idles = stats.get("bursts") or 0, stats.get("idles") or 0
    burst_time = stats.get("burst_time") or 0.0
    return {
        "burst_s": burst_time / bursts if bursts else 0.0,
        "idle_s": stats["idle_time"] / idles if idles else None,
        "burst_use": stats["burst_integral"] / burst_time if burst_time else None,
    }


def new_series() -> dict[str, Bursts]:
    """One accumulator per series, at the thresholds above."""
    return {name: Bursts(THRESHOLDS[name], name in RELATIVE) for name in SERIES}


def resources_record(resources: dict[str, Any]) -> dict[str, Any]:
    """A worker's resource stats as its record `resources:<worker>` holds them: the figures to 6 significant
    digits (a fresh dict: the worker's own is left as it is)."""
    return {series: {stat: float(f"{value:.6g}") if isinstance(value, float) else value
                     for stat, value in stats.items()} if isinstance(stats, dict) else stats
            for series, stats in resources.items()}
