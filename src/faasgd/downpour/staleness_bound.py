"""Downpour's staleness bound (config max_staleness): a worker too far ahead of the slowest waits for it.

    bound = StalenessBound(worker)   # the DownpourWorker it holds back
    bound.wait()                     # at each fetch: returns once within max_staleness steps of the slowest

The steps compared are those the store shows: each worker's record (`progress:<worker>`, written with each of
its pushes) holds its `step`, so a peer's count is as of its last push (n_push granularity) while this worker's
is its own, current one. Only running workers count (a finished or failed one is never waited for); a worker
not started yet counts as step 0. So with max_staleness s a worker never starts a fetch period more than
s + n_push - 1 steps ahead of the slowest's last push (the stale-synchronous-parallel rule of Ho et al., 2013,
in steps). 0 means no bound: `wait` returns at once and reads nothing, today's behaviour exactly.

The wait polls the records every POLL_S through the worker's own clock and sleep (StoreCalls: fakes in unit
tests), heartbeats meanwhile (its lease and supervision of the others go on), and returns at once when the job
has ended (the target, a failure, a cancel). Its deadline: when the slowest's step has not moved for
start_timeout_s (a lost worker; supervision re-invokes it), the worker goes on. Each wait and its seconds are
counted in the worker's record (`bound_waits`, `bound_wait_s`).
"""

from __future__ import annotations

import logging
from typing import Any

from faasgd import job

log = logging.getLogger("faasgd.worker")
POLL_S = 0.05  # seconds between two reads of the workers' steps while waiting


def slowest_step(records: dict[int, dict | None], me: int) -> int | None:
    """The fewest steps of the other running workers (one not started: 0); None when no other is running."""
    steps = [int((record or {}).get("step", 0)) for worker, record in records.items()
             if worker != me and (record or {}).get("state", "running") == "running"]
    return min(steps, default=None)


class StalenessBound:
    """Holds one Downpour worker within config.max_staleness steps of the slowest running worker."""

    def __init__(self, worker: Any):
        self.worker = worker
        self.limit = worker.config.max_staleness

    def lead(self) -> tuple[int, int | None]:
        """(this worker's lead over the slowest other running worker, that worker's step; None: no other)."""
        w = self.worker
        records = w.retry(lambda: job.read_progress(w.store, w.job_id, w.config.number_of_workers))
        slowest = slowest_step(records, w.progress.worker_id)
        return (0 if slowest is None else w.progress.step - slowest), slowest

    def wait(self) -> None:
        """Return once this worker is within max_staleness steps of the slowest (at once when 0 or the job ended)."""
        if not self.limit:
            return
        w = self.worker
        lead, slowest = self.lead()
        if lead <= self.limit:
            return
        started = moved_at = w.clock()
        counts = w.progress.straggling
        counts.bound_waits += 1
        try:
            while lead > self.limit and not w.job_ended():
                w.heartbeat()
                w.sleep(POLL_S)
                before = slowest
                lead, slowest = self.lead()
                now = w.clock()
                if slowest != before:
                    moved_at = now
                elif now - moved_at >= w.config.start_timeout_s:
                    log.warning("job %s worker %d: the slowest worker has not moved for %.0f s; going on %d steps "
                                "ahead", w.job_id, w.progress.worker_id, now - moved_at, lead)
                    return
        finally:
            counts.bound_wait_s += w.clock() - started
