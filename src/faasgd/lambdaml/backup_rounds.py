"""Backup workers, the merger's side: no round is merged more than LAG_BOUND rounds ahead of the slowest worker.

    bound = LagBound(worker)        # the SyncWorker that merges (worker 0)
    bound.wait(round_no)            # before merging round_no: returns once every running worker is near enough

A round with backup workers does not wait for a late contribution (lambdaml/rounds/exchange.py), and a late worker
catches up by taking rounds merged without it, each a store read and a checkpoint: about as fast as the others
run rounds, so on a busy machine it could drift behind for good and read a round whose objects are cleared
(BACKUP_KEEP_ROUNDS back). The merger therefore holds a round until every running worker's record (`rounds`,
written with its checkpoint after each round) is within LAG_BOUND rounds of it: half the rounds the objects stay
readable. The slowest count only grows, so the records are read only when a round would pass it. The wait sleeps
through the worker's barrier_sleep (heartbeat, lease, a failed or cancelled job ends it) and ends in RoundTimeout
after round_timeout_s, naming the workers behind.
"""

from __future__ import annotations

from typing import Any

from faasgd import job
from faasgd.lambdaml.rounds.errors import RoundTimeout
from faasgd.lambdaml.rounds.exchange import BACKUP_KEEP_ROUNDS

LAG_BOUND = BACKUP_KEEP_ROUNDS // 2  # rounds a worker may be behind the round being merged
POLL_S, POLL_MAX_S = 0.002, 0.05  # the first pause between two reads of the records, and the longest


def behind(records: dict[int, dict | None], me: int) -> dict[int, int]:
    """The rounds each other running worker has completed (one not started: 0)."""
    return {worker: int((record or {}).get("rounds", 0)) for worker, record in records.items()
            if worker != me and (record or {}).get("state", "running") == "running"}


class LagBound:
    """Holds the merger's round until every running worker has completed round_no - LAG_BOUND."""

    def __init__(self, worker: Any):
        self.worker = worker
        self.slowest = 0  # the fewest rounds a running worker had completed, when last read

    def wait(self, round_no: int) -> None:
        w = self.worker
        if round_no - LAG_BOUND <= self.slowest:
            return
        start = w.clock()
        pause = POLL_S
        while True:
            counts = behind(w.retry(lambda: job.read_progress(w.store, w.job_id, w.workers)), w.me)
            self.slowest = min(counts.values(), default=round_no)
            if round_no - LAG_BOUND <= self.slowest:
                return
            waited = w.clock() - start
            if waited >= w.config.round_timeout_s:
                late = sorted(i for i, rounds in counts.items() if round_no - LAG_BOUND > rounds)
                raise RoundTimeout(round_no, late, f"a catch-up to within {LAG_BOUND} rounds", waited)
            w.barrier_sleep(pause)
            pause = min(2 * pause, POLL_MAX_S)
