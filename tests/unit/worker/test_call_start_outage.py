"""A call's first store reads (its lease, its record) ride out a store outage like every later one.

The store here refuses (StoreUnavailable) or times out (StoreTimeout) the first attempts of exactly the reads a
call starts with; the call must wait them out within store_timeout_s and train, in both modes. The real-store
version (the job's own read, Redis killed, Redis and Memcached frozen) is
tests/integration/test_startup_outage_real.py.
"""

import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.errors import StoreTimeout, StoreUnavailable
from faasgd.functions.workloads import run_iteration, run_loop_call
from faasgd.worker.invocation import Call
from faasgd.store import open_store


class StartsDown:
    """A store whose first `failures` calls of each method in `methods` fail as `error`; everything else passes."""

    def __init__(self, store, methods, failures, error):
        self._store, self._left, self._error = store, {m: failures for m in methods}, error
        self.failed = {m: 0 for m in methods}

    def __getattr__(self, name):
        attribute = getattr(self._store, name)
        if name not in self._left:
            return attribute

        def call(*args, **kwargs):
            if self._left[name] > 0:
                self._left[name] -= 1
                self.failed[name] += 1
                raise self._error(self._store.url, f"{name}: the store is restarting")
            return attribute(*args, **kwargs)
        return call


@pytest.mark.parametrize("error", [StoreUnavailable, StoreTimeout])
@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
@pytest.mark.parametrize("method", ["add_record", "get_record", "recover_worker", "get_records"])
def test_a_call_whose_first_reads_fail_waits_and_trains(mode, method, error):
    config = load_config({}, {"dataset": "synthetic", "train_samples": 300, "test_samples": 50, "hidden_sizes": [8],
                              "number_of_workers": 1, "max_epochs": 1, "target_accuracy": 1.0,
                              "invocation_mode": mode, "store_url": f"memory://start-{mode}-{method}-{error.__name__}",
                              "store_timeout_s": 10, "profile_hz": 0})
    memory = open_store(config.store_url)
    job_id = job.create_job(memory, config)
    if method == "get_record":  # read when the lease is there already: held under this call's own id (an earlier
        # delivery of it that died), waited out, then taken
        memory.add_record(job_id, "lease:0:" + ("loop" if mode == "loop" else "0"), {"call_id": "call-1"}, ttl_s=1)
    store = StartsDown(memory, [method], 2, error)
    run = run_loop_call if mode == "loop" else run_iteration
    answer = run(Call(config, store, job_id, 0, "call-1", loader=load_shard))
    assert store.failed[method] == 2  # the outage did hit the call's start
    assert answer["state"] == "finished" and not answer["duplicate"], answer
    assert memory.get_record(job_id, "result")["state"] == "done"
