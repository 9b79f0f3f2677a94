"""What every worker does to stay visibly alive, whatever its algorithm (Downpour's or the synchronous one).

A heartbeat is a record `heartbeat:<worker>` expiring after lease_s (keys.heartbeat_name), written at most every
HEARTBEAT_EVERY_S; supervision re-invokes a worker whose heartbeat is gone, and `on_heartbeat` renews the
call's lease. The worker's resource stats, when the profile has renewed them since the last beat, are written with
it to their own record `resources:<worker>` (they no longer ride with every push: worker/progress.py). Whether the job has ended is asked at most every ENDED_CHECK_EVERY_S.
The class using the mixin provides: store, job_id, config, progress, on_heartbeat, and clock and retry (StoreCalls).
"""

from __future__ import annotations

import math
import time

from faasgd import job
from faasgd.store import keys
from faasgd.profile.bursts import resources_record

HEARTBEAT_EVERY_S = 1.0  # how often a worker says it is alive (and renews its lease) between store operations
ENDED_CHECK_EVERY_S = 0.25  # how often a worker checks whether the job has ended


class Liveness:
    _last_heartbeat = -math.inf
    _last_ended_check = -math.inf
    resources_written: object = None  # the progress's resources dict last written (the profile replaces it)

    def heartbeat(self, force: bool = False) -> None:
        """Say this worker is alive (a record expiring after lease_s); supervision re-invokes silent ones."""
        now = self.clock()
        if not force and now - self._last_heartbeat < HEARTBEAT_EVERY_S:
            return
        self._last_heartbeat = now
        value = {"owner": self.progress.owner, "pushes": self.progress.pushes, "at": time.time()}
        self.retry(lambda: self.store.put_record(self.job_id, keys.heartbeat_name(self.progress.worker_id), value,
                                                  ttl_s=self.config.lease_s))
        self.write_resources()
        if self.on_heartbeat is not None:  # the lease's renewal: a store outage is ridden out here too
            self.retry(self.on_heartbeat)

    def write_resources(self) -> None:
        """The worker's resource stats to `resources:<worker>`, if the profile renewed them since they were last
        written (nothing without a profile)."""
        resources = self.progress.resources
        if not resources or resources is self.resources_written:
            return
        self.retry(lambda: self.store.put_record(self.job_id, keys.resources_name(self.progress.worker_id),
                                                  resources_record(resources)))
        self.resources_written = resources

    def job_ended(self) -> bool:
        """Whether the job has ended (another worker reached the target, or it failed); checked now and then."""
        now = self.clock()
        if now - self._last_ended_check < ENDED_CHECK_EVERY_S:
            return False
        self._last_ended_check = now
        return self.retry(lambda: job.has_ended(self.store, self.job_id))
