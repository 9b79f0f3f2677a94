"""A job's resource figures from its workers' records: the columns test.sh, `faasgd status` and the result show.

For each series (bursts.SERIES) Driple's three figures over every burst and idle period of every worker
(their stats added, bursts.merge), then totals and peaks:
    cpu_burst_s  cpu_idle_s  cpu_burst_use (cores)     rss_burst_s  rss_idle_s  rss_burst_use (MB)
    tx_burst_s   tx_idle_s   tx_burst_use (bytes/s)    rx_burst_s   rx_idle_s   rx_burst_use (bytes/s)
    tx_bytes  rx_bytes (all workers, to and from the stores)
    cpu_peak (cores, one worker)  rss_peak_mb (one process)  tx_peak_bps  rx_peak_bps (one worker)
A job without profiles (profile_hz 0, or records from before) has None in every column. The job's CPU-seconds are
not sampled but counted, with or without a profile (faasgd.job.result: cpu_s).
"""

from __future__ import annotations

from typing import Iterable

from faasgd.profile.bursts import SERIES, figures, merge

DRIPLE = tuple(f"{name}_{figure}" for name in SERIES for figure in ("burst_s", "idle_s", "burst_use"))
TOTALS = ("tx_bytes", "rx_bytes")
PEAKS = ("cpu_peak", "rss_peak_mb", "tx_peak_bps", "rx_peak_bps")
MEASURES: tuple[str, ...] = DRIPLE + TOTALS + PEAKS


def worker_stats(records: Iterable[dict | None]) -> list[dict]:
    """The `resources` of the worker records that have them."""
    return [r["resources"] for r in records if r and r.get("resources")]


def job_figures(records: Iterable[dict | None]) -> dict:
    """Every key of MEASURES for a job, from its workers' records."""
    profiles = worker_stats(records)
    out: dict = dict.fromkeys(MEASURES)
    if not profiles:
        return out
    for name in SERIES:
        merged = merge(p.get(name) for p in profiles)
        for figure, value in figures(merged).items():
            out[f"{name}_{figure}"] = value
    totals = {name: merge(p.get(name) for p in profiles) for name in SERIES}
    out["tx_bytes"] = round(totals["tx"]["integral"])
    out["rx_bytes"] = round(totals["rx"]["integral"])
    out["cpu_peak"], out["rss_peak_mb"] = totals["cpu"]["peak"], totals["rss"]["peak"]
    out["tx_peak_bps"], out["rx_peak_bps"] = totals["tx"]["peak"], totals["rx"]["peak"]
    return out
