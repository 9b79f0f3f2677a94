"""A batch's runs into the results database (results_store.py) as each finishes, redacted like every output.

The database is opened after every check of the batch's input (nothing is written for bad input), its
batch row written before the first run, each run's row when the run ends, and the batch's meta at the end.
A database that cannot be written is said once and the batch goes on: the batch folder still has it all.
"""

from __future__ import annotations

import sqlite3
from typing import Callable

from faasgd.api import results_store
from faasgd.batch.redact import Redactor
from faasgd.job.result import MEASURES
from faasgd.stacking import flow

KEPT = MEASURES + ("cpu_clock", "placement")  # what a run row keeps beside its config (cpu_clock: cpu_s's clocks)
KEPT_BY_WORKLOAD = {"emnist": KEPT, "stacking": flow.MEASURES}  # a stacking run's: the driver's answer, flat


class BatchRecord:
    """The open database of one batch, or nothing after the first failure to write it."""

    def __init__(self, path: str, meta: dict, redactor: Redactor, say: Callable[..., None],
                 kept: tuple[str, ...] = KEPT) -> None:
        self.path, self.redactor, self.say, self.kept = path, redactor, say, kept
        self.db: sqlite3.Connection | None = None
        self.batch_id: int | None = None
        self._guard(lambda: self._open(meta))

    def _open(self, meta: dict) -> None:
        self.db = results_store.open_db(self.path)
        self.batch_id = results_store.start_batch(self.db, self.redactor.value(meta))

    def _guard(self, write: Callable[[], None]) -> None:
        if self.path is None or (self.db is None and self.batch_id is not None):
            return
        try:
            write()
        except (sqlite3.Error, OSError) as error:
            self.say(f"test.sh: results database {self.path} not written ({error}); the batch folder has the runs",
                     error=True)
            if self.db is not None:
                self.db.close()
            self.db, self.batch_id = None, -1

    def run(self, index: int, run: dict) -> None:
        if self.db is not None:
            self._guard(lambda: results_store.record_run(self.db, self.batch_id, index, self.redactor.value(run), self.kept))

    def finish(self, meta: dict) -> None:
        if self.db is not None:
            self._guard(lambda: results_store.finish_batch(self.db, self.batch_id, self.redactor.value(meta)))
            self.db.close()
            self.db = None
