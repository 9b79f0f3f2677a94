"""What spans cost a worker: samples/s of one in-process Downpour worker, untraced and traced.

Traced = what a replica does with OTEL_TRACES_EXPORTER=faasgd-file: an SDK TracerProvider, a `train` span, the
worker's store wrapped by faasgd.tracing.traced_store (one span per fetch, push and record write), every span
written to a JSON-lines file as it ends (the synchronous exporter: the dearest case). Runs alternate, best and median of
`--repeats` each, over a real redis-server (as bench/throughput.py) and over memory:// (no network: the
largest relative overhead). 784-100-10 tanh, batch 128, as throughput.py.

Usage: python bench/trace_overhead.py [--epochs 2] [--repeats 3] [--period 10]
"""

from __future__ import annotations

import argparse
import tempfile
import uuid

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from threadpoolctl import threadpool_limits

from faasgd import job, tracing
from faasgd.config import load_config
from faasgd.local.services.stores import start_redis
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store
from faasgd.tracing.file_exporter import FileSpanExporter


def one_run(url: str, epochs: int, period: int, traced: bool, provider: TracerProvider) -> tuple[float, int]:
    config = load_config({}, {"dataset": "synthetic", "train_samples": 20000, "test_samples": 500,
                              "validation_samples": 500, "hidden_sizes": [100], "batch_size": 128,
                              "max_epochs": epochs, "target_accuracy": 1.0, "number_of_workers": 1,
                              "n_fetch": period, "n_push": period, "profile_hz": 0, "store_url": url})
    store = open_store(url)
    job_id = job.create_job(store, config)
    spans_before = len(provider._active_span_processor._span_processors[0].span_exporter.lines)
    if traced:
        with provider.get_tracer("faasgd").start_as_current_span("train"):
            record = run_worker(Call(config, tracing.traced_store(store), job_id, 0))
    else:
        record = run_worker(Call(config, store, job_id, 0))
    spans = len(provider._active_span_processor._span_processors[0].span_exporter.lines) - spans_before
    return record["samples_per_s"], spans


class CountingFileExporter(FileSpanExporter):
    def __init__(self, directory):
        super().__init__(directory)
        self.lines = []

    def export(self, spans):
        self.lines.extend(s.name for s in spans)
        return super().export(spans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--period", type=int, default=10, help="n_fetch = n_push")
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(SimpleSpanProcessor(CountingFileExporter(tempfile.mkdtemp(prefix="faasgd-spans-"))))
    tracing.tracer = lambda: provider.get_tracer("faasgd")  # this process only; no global provider
    redis = start_redis()
    try:
        with threadpool_limits(1):
            for name, url in (("redis", redis.url), ("memory", None)):
                best: dict[bool, list[float]] = {False: [], True: []}
                spans = 0
                for _ in range(args.repeats):
                    for traced in (False, True):
                        fresh = url or f"memory://bench{uuid.uuid4().hex[:6]}"  # a memory space per run: none grows
                        rate, count = one_run(fresh, args.epochs, args.period, traced, provider)
                        best[traced].append(rate)
                        spans = count if traced else spans
                top = {k: max(v) for k, v in best.items()}
                middle = {k: sorted(v)[len(v) // 2] for k, v in best.items()}
                print(f"{name:7s} n_fetch=n_push={args.period}: untraced {top[False]:8.0f} samples/s, traced "
                      f"{top[True]:8.0f} samples/s ({spans} spans per run): overhead {100 * (1 - top[True] / top[False]):+.1f}% "
                      f"(best of {args.repeats}), {100 * (1 - middle[True] / middle[False]):+.1f}% (medians)")
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
