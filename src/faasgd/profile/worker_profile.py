"""One worker call's profile: its sampler, the stats in the worker's record, the series in a record of its own.

    profile = WorkerProfile.start(config.profile_hz, progress, job_id)  # before the worker loads its data
    profile.watch(trainer.comms)                               # its communication thread counts too
    ...
    profile.finish(store)                                        # before the worker's final record
    profile.ended(store)                                         # after it: the job's result, if written

While the call trains, `progress.resources` is replaced about once a second by the stats of the worker's
earlier calls (what its record `resources:<worker>` held when this call resumed it) merged with this call's so
far; the worker writes them to that record with its heartbeat (worker/liveness.py) and `finish` writes the
final ones, so a resumed call goes on from there. At the end, the call's series is appended to the record
`profile:<worker>` (bounded: `MAX_POINTS` points per
worker, older ones averaged in pairs), which the status query `profile=1` (emnist-setup) and
test.sh's per-run plot read. Each publish also hands the worker's figures to this process's Prometheus
exporter (exporter.py). `profile_hz` 0 profiles nothing and exports nothing.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from faasgd.profile import exporter
from faasgd.profile.bursts import SERIES, merge
from faasgd.profile.sampler import Sampler
from faasgd.store import keys
from faasgd.profile.bursts import resources_record

log = logging.getLogger("faasgd.worker")
MAX_POINTS = 1200  # per worker in its profile record


def comms_threads(comms: Any) -> list[int]:
    """Idents of a worker store thread's background thread (none when blocking; a stand-in without any)."""
    return list(getattr(comms, "thread_ids", ()))


class WorkerProfile:
    """The sampler of one worker call and where its figures go."""

    def __init__(self, hz: float, progress: Any, job_id: str = "") -> None:
        self.progress, self.job_id = progress, job_id
        self.base = dict(progress.resources or {})
        self.idents = [threading.get_ident()]
        self.comms: Any = None
        self.sampler = Sampler(hz, self.threads) if hz > 0 else None
        self.finished = False

    @classmethod
    def start(cls, hz: float, progress: Any, job_id: str = "") -> "WorkerProfile":
        profile = cls(hz, progress, job_id)
        if profile.sampler is not None:
            profile.sampler.start(every=profile.publish)
        return profile

    def threads(self) -> list[int]:
        return self.idents + (comms_threads(self.comms) if self.comms is not None else [])

    def thread_cpu_s(self) -> float:
        """CPU-seconds of the sampler's thread, its whole life (0.0 when nothing is profiled): the call's own."""
        return 0.0 if self.sampler is None else self.sampler.thread_cpu_s()

    def watch(self, comms: Any) -> None:
        """Count the worker's communication thread too."""
        self.comms = comms

    def publish(self) -> None:
        """The worker's stats so far into its progress (a new dict: a record being written keeps the old one)."""
        if self.sampler is None:
            return
        now = self.sampler.summary()
        self.progress.resources = {name: merge([self.base.get(name), now[name]]) for name in SERIES}
        self.export()

    def export(self) -> None:
        if self.job_id:
            p = self.progress
            values = {key: getattr(p, key, None) for key in EXPORTED}
            values["samples_per_s"] = p.samples / p.train_s if p.train_s > 0 else 0.0
            exporter.update(self.job_id, values, dict(self.sampler.last), ended=self.finished)

    def finish(self, store: Any = None) -> None:
        """Stop sampling, put the final stats in the progress and append the series to the worker's profile
        record (best effort: a profile never fails a worker)."""
        if self.sampler is None or self.finished:
            return
        self.finished = True
        self.sampler.stop()
        self.publish()
        job_id = self.job_id
        if store is None or not job_id:
            return
        try:
            worker_id = self.progress.worker_id
            store.put_record(job_id, keys.resources_name(worker_id), resources_record(self.progress.resources))
            name = keys.profile_name(worker_id)
            kept = store.get_record(job_id, name)
            store.put_record(job_id, name, append(kept, self.sampler.series(), self.sampler.period))
        except Exception as error:  # the store may be what ended the call
            log.warning("job %s worker %d: profile not written: %s", job_id, self.progress.worker_id, error)


    def ended(self, store: Any) -> None:
        """After the worker's final record: the job's result, if written, to the exporter (best effort)."""
        if self.sampler is None or not self.job_id:
            return
        try:
            result = store.get_record(self.job_id, keys.RESULT)
        except Exception:  # the store may be gone
            return
        if result is not None:
            exporter.job_result(self.job_id, result)


EXPORTED = ("worker_id", "epoch", "loss", "accuracy", "samples", "pushes", "fetches", "conflicts", "retries",
            "last_staleness", "resources")


def append(kept: dict | None, series: dict, period: float) -> dict:
    """A worker's profile record with one more call's series (times in seconds since its first call began)."""
    out = kept or {"start": series["start"], "period": period, "t": [], **{name: [] for name in SERIES}}
    offset = series["start"] - out["start"]
    out["t"] = out["t"] + [round(t + offset, 3) for t in series["t"]]
    for name in SERIES:
        out[name] = out[name] + series[name]
    while len(out["t"]) > MAX_POINTS:
        for key in ("t", *SERIES):
            values = out[key]
            out[key] = [(a + b) / 2 for a, b in zip(values[::2], values[1::2])]
    return out
