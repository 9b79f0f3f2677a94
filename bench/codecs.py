"""Compressed pushes: push_codec f32 vs f16 vs topk:0.1 vs topk:0.01 on the MLP, Fashion-MNIST, to a target.

Each run is a real job through the direct path (`faasgd train --direct`'s cli/direct.run_job: the workers
as processes on this machine) against a redis-server this script starts: 2 workers, n_fetch = n_push = 10,
the default update rule and learning rate, to 0.85 validation accuracy. Per codec, over the seeds: samples
to the target (and as a multiple of f32's), the bytes the workers' pushes handed over (the result's
push_bytes: the encoded updates) and as a fraction of f32's, the parameter bytes fetched, the bytes on
the store sockets (tx/rx, profile) per worker, and what the workers sent per push (all their socket tx over
their pushes: on Redis a top-k push is added inside the server, so it sends its pairs, not whole chunks;
f32 and f16 send the chunks), seconds to the target and the model's test accuracy.
Usage: python bench/codecs.py [--codecs f32,f16,topk:0.1,topk:0.01] [--seeds 1] [--workers 2]
                              [--period 10] [--max-epochs 15]   (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics
import time

from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.functions import orchestrate
from faasgd.local.services.stores import start_redis
from faasgd.store import open_store

TARGET = 0.85


def run(url: str, codec: str, seed: int, workers: int, period: int, max_epochs: int) -> dict:
    config = load_config(None, {"dataset": "fashion-mnist", "push_codec": codec, "seed": seed,
                                "number_of_workers": workers, "n_fetch": period, "n_push": period,
                                "target_accuracy": TARGET, "max_epochs": max_epochs, "store_url": url})
    with open_store(url) as store:
        job_id = orchestrate.create_job(store, config)
        status = direct.run_job(config, store, job_id, timeout_s=1800)
    return status.get("result") or {}


def mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def sent_per_push(result: dict) -> float | None:
    """Bytes the workers sent to the store (socket tx) per applied push."""
    if result.get("tx_bytes") is None or not result.get("pushes"):
        return None
    return result["tx_bytes"] / result["pushes"]


def table(results: dict[str, list[dict]]) -> str:
    base = results.get("f32") or []
    base_samples = mean([r.get("samples_to_target") for r in base])
    base_pushed = mean([r.get("push_bytes") / max(1, r.get("pushes") or 1) for r in base])
    base_sent = mean([sent_per_push(r) for r in base])
    lines = ["| push_codec | reached | samples to 0.85 | x f32 | pushed per worker (MB) | bytes per push, x f32 "
             "| fetched per worker (MB) | socket tx / rx per worker (MB) | socket tx per push, x f32 | s to 0.85 "
             "| test accuracy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for codec, runs in results.items():
        reached = [r for r in runs if r.get("reached_target")]
        samples = mean([r.get("samples_to_target") for r in reached])
        per_push = mean([r["push_bytes"] / max(1, r.get("pushes") or 1) for r in runs])
        workers = runs[0].get("number_of_workers") or 1
        tx, rx = mean([r.get("tx_bytes") for r in runs]), mean([r.get("rx_bytes") for r in runs])
        sent = mean([sent_per_push(r) for r in runs])
        lines.append(
            f"| `{codec}` | {len(reached)}/{len(runs)} | {samples or 0:,.0f} | "
            f"{(samples / base_samples) if samples and base_samples else float('nan'):.2f} | "
            f"{mean([r['push_bytes_per_worker'] for r in runs]) / 1e6:.2f} | "
            f"{per_push:,.0f} B, {(per_push / base_pushed) if base_pushed else float('nan'):.3f} | "
            f"{mean([r['fetch_bytes_per_worker'] for r in runs]) / 1e6:.1f} | "
            f"{(tx or 0) / workers / 1e6:.1f} / {(rx or 0) / workers / 1e6:.1f} | "
            f"{sent or 0:,.0f} B, {(sent / base_sent) if sent and base_sent else float('nan'):.3f} | "
            f"{mean([r.get('time_to_target_s') for r in reached]) or float('nan'):.1f} | "
            f"{mean([r.get('final_test_accuracy') for r in runs]) or float('nan'):.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codecs", default="f32,f16,topk:0.1,topk:0.01")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--period", type=int, default=10)
    parser.add_argument("--max-epochs", type=int, default=15)
    args = parser.parse_args()
    server = start_redis()
    started = time.monotonic()
    try:
        results: dict[str, list[dict]] = {}
        for seed in range(args.seeds):
            for codec in args.codecs.split(","):
                result = run(server.url, codec, seed, args.workers, args.period, args.max_epochs)
                results.setdefault(codec, []).append(result)
                print(f"{codec} seed {seed}: {result.get('state')} reached={result.get('reached_target')} "
                      f"samples_to_target={result.get('samples_to_target')} push_bytes={result.get('push_bytes')} "
                      f"residual_resets={result.get('residual_resets')} "
                      f"pushes={result.get('pushes')} t={result.get('time_to_target_s')}", flush=True)
    finally:
        server.stop()
    print(table(results))
    print(f"({args.workers} workers, n_fetch = n_push = {args.period}, {args.seeds} seed(s), "
          f"{time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
