"""A job's CPU: the workers' counted CPU-seconds summed whatever profile_hz, the store servers' count over the job
(from its creation to its result), both per sample, and the clocks named."""

from __future__ import annotations

import threading

import pytest

from faasgd import job
from faasgd.config import TrainConfig, load_config
from faasgd.errors import StoreUnavailable
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.job.result import MEASURES, RESULT_KEYS, Outcome, build_result
from faasgd.store import keys, open_store

META = {"job_id": "j", "created_at": 1000.0, "train_rows": 400, "server_cpu_s": 10.0}


def worker(cpu_s: float, clock: str, samples: int = 500) -> dict:
    return {"state": "finished", "samples": samples, "intervals": [[1000.0, 1001.0]], "cpu_s": cpu_s,
            "cpu_clock": clock}


def test_the_result_adds_the_workers_cpu_and_the_stores_over_the_job_per_sample():
    config = TrainConfig(number_of_workers=2)
    progress = {0: worker(1.0, "process"), 1: worker(2.5, "process")}
    result = build_result(config, META, progress, None, Outcome(now=1002.0, server_cpu_s=10.5))
    assert {"cpu_s", "store_cpu_s", "cpu_s_per_sample"} <= set(MEASURES) and "cpu_clock" in RESULT_KEYS
    assert result["cpu_s"] == pytest.approx(3.5) and result["store_cpu_s"] == pytest.approx(0.5)
    assert result["cpu_s_per_sample"] == pytest.approx(4.0 / 1000) and result["cpu_clock"] == "process"
    assert result["cpu_burst_s"] is None  # no profile: its sampled figures are empty, the counted CPU is not


@pytest.mark.parametrize("created, now", [(None, 10.5), (10.0, None), (10.0, 9.0)])  # 9.0: the servers restarted
def test_a_store_count_unknown_at_either_end_leaves_the_workers_alone(created, now):
    progress = {0: worker(1.0, "threads"), 1: worker(1.0, "process")}
    result = build_result(TrainConfig(number_of_workers=2), {**META, "server_cpu_s": created}, progress, None,
                          Outcome(server_cpu_s=now))
    assert result["store_cpu_s"] is None and result["cpu_s_per_sample"] == pytest.approx(2.0 / 1000)
    assert result["cpu_clock"] == "mixed"


def test_a_job_whose_workers_never_wrote_has_no_clock_and_no_rate():
    result = build_result(TrainConfig(number_of_workers=1), META, {0: None}, None, Outcome(server_cpu_s=10.0))
    assert result["cpu_s"] == 0.0 and result["cpu_s_per_sample"] is None and result["cpu_clock"] is None
    assert result["store_cpu_s"] == 0.0


class CountingStore:
    """The store servers' count as a sequence of readings (or an error), one per server_cpu_s."""

    def __init__(self, store, readings):
        self.readings = list(readings)
        store.server_cpu_s = self.read

    def read(self):
        reading = self.readings.pop(0)
        if isinstance(reading, BaseException):
            raise reading
        return reading


def run_job(name: str, readings: list, **overrides) -> tuple[dict, dict]:
    config = load_config({}, {"dataset": "synthetic", "train_samples": 900, "test_samples": 100, "hidden_sizes": [8],
                              "batch_size": 30, "number_of_workers": 2, "max_epochs": 2, "target_accuracy": 1.0,
                              "store_url": f"memory://job-cpu-{name}", **overrides})
    store = open_store(config.store_url)
    CountingStore(store, readings)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, store, job_id, i),)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return store.get_record(job_id, keys.JOB), store.get_record(job_id, keys.RESULT)


def test_a_job_reads_the_stores_count_at_its_creation_and_at_its_result():
    meta, result = run_job("both", [5.0, 7.25], profile_hz=0)
    assert meta["server_cpu_s"] == 5.0 and result["state"] == "done"
    assert result["store_cpu_s"] == pytest.approx(2.25)
    assert result["cpu_s"] > 0 and result["cpu_clock"] == "threads"  # two workers' calls in one process at once
    assert result["cpu_s_per_sample"] == pytest.approx((result["cpu_s"] + 2.25) / result["samples"])


def test_a_store_that_cannot_be_asked_leaves_its_share_unknown_and_the_job_done():
    meta, result = run_job("gone", [StoreUnavailable("memory://x", "down"), 7.25])
    assert meta["server_cpu_s"] is None and result["state"] == "done" and result["store_cpu_s"] is None
    assert result["cpu_s_per_sample"] == pytest.approx(result["cpu_s"] / result["samples"])
