"""The training metrics of the workers this process runs, in Prometheus' text format (0.0.4).

Each worker call's profile (worker_profile.py) hands its worker's progress and resource figures here about
once a second (`update`), and the result of its job when it ends (`job_result`); `render()` is what
`GET /metrics` on an emnist-train replica answers (emnist-train/handler.py). So metrics come from the
replicas that run the workers, and are scraped where the replicas are:
- on a cluster, by Prometheus from the function's pods: stack.yml annotates emnist-train with
  `prometheus.io.scrape: "true"`, `prometheus.io.port: "8080"`, `prometheus.io.path: /metrics` (of-watchdog
  forwards the path to the function; the usual `kubernetes-pods` relabelling reads the annotations);
- on the local runtime, by its gateway, which appends the /metrics of every replica of a function so
  annotated to its own (local/gateway/scrape.py), so one /metrics has the gateway and the training.
Labels: `job_id`, `worker_id` and `replica` (the pod or replica: a worker handed over from one replica to
another is two series, never a duplicate). Not `job`: Prometheus' own target label. A worker's series
stay for KEEP_S after its call ends (so a scrape after the end still sees the last values), then go.
The text is prometheus-client's: a custom collector (`TrainingCollector`) on a registry of this module's own
(`REGISTRY`, not the library's global one), written out by `generate_latest` in the text format 0.0.4.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from faasgd.profile.bursts import SERIES, figures

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # "text/plain; version=0.0.4; charset=utf-8"
KEEP_S = 300.0  # an ended worker's (or job's) series are kept this long
MAX_SERIES = 2000  # workers kept at most (the oldest ended ones go first)

# name, type, help, value of a worker's entry (None: no sample)
WORKER_FAMILIES: tuple[tuple[str, str, str, Callable[[dict], Any]], ...] = (
    ("faasgd_worker_running", "gauge", "1 while the worker's call trains here, 0 after it ended",
     lambda w: 0 if w["ended_at"] else 1),
    ("faasgd_worker_epoch", "gauge", "Epochs the worker has completed", lambda w: w["p"].get("epoch")),
    ("faasgd_worker_loss", "gauge", "Mean training loss of the worker's last epoch", lambda w: w["p"].get("loss")),
    ("faasgd_worker_validation_accuracy", "gauge", "Validation accuracy of the global parameters at the "
     "last epoch end the worker evaluated (one worker a round of epoch ends)", lambda w: w["p"].get("accuracy")),
    ("faasgd_worker_samples_per_second", "gauge", "Training samples per second of training time",
     lambda w: w["p"].get("samples_per_s")),
    ("faasgd_worker_samples_total", "counter", "Training samples processed", lambda w: w["p"].get("samples")),
    ("faasgd_worker_pushes_total", "counter", "Pushes the store applied", lambda w: w["p"].get("pushes")),
    ("faasgd_worker_fetches_total", "counter", "Fetches of the global parameters", lambda w: w["p"].get("fetches")),
    ("faasgd_worker_conflicts_total", "counter", "Races the worker's pushes lost (and redid)",
     lambda w: w["p"].get("conflicts")),
    ("faasgd_worker_retries_total", "counter", "Store calls retried after an outage", lambda w: w["p"].get("retries")),
    ("faasgd_worker_staleness_steps", "gauge", "Staleness of the worker's last push, in other workers' steps",
     lambda w: w["p"].get("last_staleness")),
    ("faasgd_worker_cpu_seconds_total", "counter", "CPU seconds of the worker's threads",
     lambda w: _stat(w, "cpu", "integral")),
    ("faasgd_worker_store_sent_bytes_total", "counter", "Bytes the worker sent to the stores",
     lambda w: _stat(w, "tx", "integral")),
    ("faasgd_worker_store_received_bytes_total", "counter", "Bytes the worker received from the stores",
     lambda w: _stat(w, "rx", "integral")),
    ("faasgd_worker_cpu_cores", "gauge", "CPU of the worker's threads over the last sample, in cores",
     lambda w: w["last"].get("cpu")),
    ("faasgd_worker_resident_memory_bytes", "gauge", "Resident memory of the worker's process (shared by the "
     "workers of a replica)", lambda w: None if w["last"].get("rss") is None else w["last"]["rss"] * 1e6),
    ("faasgd_worker_store_sent_bytes_per_second", "gauge", "Store bytes sent per second over the last sample",
     lambda w: w["last"].get("tx")),
    ("faasgd_worker_store_received_bytes_per_second", "gauge", "Store bytes received per second over the last "
     "sample", lambda w: w["last"].get("rx")),
)
# Driple's figures per series (label `series`: cpu, rss, tx, rx), docs/reference/resource-profiles.md
BURST_FAMILIES = (
    ("faasgd_worker_burst_seconds", "Mean burst duration of the series", "burst_s"),
    ("faasgd_worker_idle_seconds", "Mean idle duration between bursts of the series", "idle_s"),
    ("faasgd_worker_burst_consumption", "Mean value of the series during bursts (cores, MB, bytes/s)", "burst_use"),
)
JOB_FAMILIES = (
    ("faasgd_job_final_validation_accuracy", "Validation accuracy of the job's model", "final_validation_accuracy"),
    ("faasgd_job_final_test_accuracy", "Test accuracy of the job's model", "final_test_accuracy"),
    ("faasgd_job_time_to_target_seconds", "Seconds from the job's creation to the target", "time_to_target_s"),
    ("faasgd_job_samples_per_second", "The job's samples per second", "samples_per_s"),
)

_lock = threading.Lock()
_workers: dict[tuple[str, int], dict] = {}
_jobs: dict[str, dict] = {}


def replica_name() -> str:
    return os.environ.get("HOSTNAME") or socket.gethostname()


def _stat(entry: dict, series: str, key: str) -> Any:
    return ((entry["p"].get("resources") or {}).get(series) or {}).get(key)


def update(job_id: str, progress: dict, last: dict | None = None, ended: bool = False, now: float | None = None) -> None:
    """The worker's latest record-like values (`progress`: WorkerProgress fields and `samples_per_s`) and its
    last sample ({"cpu", "rss", "tx", "rx"}); `ended` when its call has ended."""
    now = time.time() if now is None else now
    with _lock:
        _workers[(job_id, int(progress["worker_id"]))] = {"p": progress, "last": last or {}, "updated_at": now,
                                                          "ended_at": now if ended else None}
        if len(_workers) > MAX_SERIES:
            oldest = min(_workers, key=lambda k: (_workers[k]["ended_at"] is None, _workers[k]["updated_at"]))
            del _workers[oldest]


def job_result(job_id: str, result: dict, now: float | None = None) -> None:
    with _lock:
        _jobs[job_id] = {"result": result, "ended_at": time.time() if now is None else now}


def forget() -> None:
    """Drop every series (tests)."""
    with _lock:
        _workers.clear()
        _jobs.clear()


def _number(value: Any) -> float | None:
    """The value as a sample's float; None (no sample) for a missing or non-numeric value."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _family(name: str, kind: str, text: str, labels: list[str]) -> Metric:
    family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    return family(name, text, labels=labels)  # a counter's name loses its `_total`; its samples keep it


def _drop_ended(now: float) -> tuple[list, list]:
    """Drop the workers and jobs ended more than KEEP_S ago; the others, sorted."""
    with _lock:
        for key in [k for k, w in _workers.items() if w["ended_at"] and now - w["ended_at"] > KEEP_S]:
            del _workers[key]
        for key in [k for k, j in _jobs.items() if now - j["ended_at"] > KEEP_S]:
            del _jobs[key]
        return sorted(_workers.items()), sorted(_jobs.items())


class TrainingCollector:
    """Every family of the workers and jobs kept, as prometheus-client collects them (once per scrape)."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        workers, jobs = _drop_ended(self.clock())
        replica = replica_name()
        for name, kind, text, value in WORKER_FAMILIES:
            family = _family(name, kind, text, ["job_id", "worker_id", "replica"])
            for (job_id, worker_id), entry in workers:
                number = _number(value(entry))
                if number is not None:
                    family.add_metric([job_id, str(worker_id), replica], number)
            yield family
        for name, text, figure in BURST_FAMILIES:
            family = GaugeMetricFamily(name, text, labels=["job_id", "worker_id", "replica", "series"])
            for (job_id, worker_id), entry in workers:
                for series in SERIES:
                    stats = (entry["p"].get("resources") or {}).get(series)
                    number = _number(figures(stats)[figure]) if stats else None
                    if number is not None:
                        family.add_metric([job_id, str(worker_id), replica, series], number)
            yield family
        for name, text, key in JOB_FAMILIES:
            family = GaugeMetricFamily(name, text, labels=["job_id", "replica"])
            for job_id, entry in jobs:
                number = _number(entry["result"].get(key))
                if number is not None:
                    family.add_metric([job_id, replica], number)
            yield family


REGISTRY = CollectorRegistry(auto_describe=False)  # this module's own: the global one holds process metrics
REGISTRY.register(TrainingCollector())


def render(now: float | None = None) -> str:
    """The exposition text of every worker and job kept (dropping those ended more than KEEP_S ago)."""
    if now is None:
        return generate_latest(REGISTRY).decode("utf-8")
    registry = CollectorRegistry(auto_describe=False)  # the same families, at the time given
    registry.register(TrainingCollector(clock=lambda: now))
    return generate_latest(registry).decode("utf-8")


def family_names() -> list[str]:
    """Every family this module exports (counters as their samples are named)."""
    return [f[0] for f in WORKER_FAMILIES] + [f[0] for f in BURST_FAMILIES] + [f[0] for f in JOB_FAMILIES]
