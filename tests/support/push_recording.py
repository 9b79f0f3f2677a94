"""A real store that keeps every push it applied, and two workers run on it in threads: the exact-sum checks of
the integration tests (test_comm_real.py, test_redis_cluster_job.py) replay those pushes against the store's state."""

from __future__ import annotations

import threading
import uuid

import numpy as np

from faasgd import job
from faasgd.errors import StoreTimeout, StoreUnavailable
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call


class RecordingStore:
    """Delegates to a real store; keeps every applied push's update and the version it reported, by push id
    (`applied`: push id -> (version, update)), and the outages its fetches and pushes met (`outages`: messages)."""

    def __init__(self, inner):
        self.inner, self.applied, self.outages, self.lock = inner, {}, [], threading.Lock()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def fetch(self, *args, **kwargs):
        try:
            return self.inner.fetch(*args, **kwargs)
        except (StoreUnavailable, StoreTimeout) as e:
            self.outages.append(str(e))
            raise

    def push_update(self, job_id, delta, out=None, **push):
        sent = np.array(delta, copy=True)
        try:
            result = self.inner.push_update(job_id, delta, out=out, **push)
        except (StoreUnavailable, StoreTimeout) as e:
            self.outages.append(str(e))
            raise
        if result.applied:
            with self.lock:
                self.applied.setdefault(push["push_id"], (result.version, sent))
        return result

    def updates(self) -> list[np.ndarray]:
        """The applied updates in the order of the versions they reported."""
        return [sent for _, sent in sorted(self.applied.values(), key=lambda applied: applied[0])]


def run_two_workers(config, store, during=None, timeout_s: float = 180) -> tuple[str, np.ndarray, list]:
    """Create the job, run both workers in threads (calling `during(job_id)` meanwhile); (job id, initial
    weights, each worker's final record)."""
    job_id = job.create_job(store, config)
    init, _ = store.get_weights(job_id)
    finals = [None, None]

    def work(worker_id):
        finals[worker_id] = run_worker(Call(config, store, job_id, worker_id, f"call-{uuid.uuid4().hex[:6]}"))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    if during is not None:
        during(job_id)
    for t in threads:
        t.join(timeout_s)
    return job_id, init, finals
