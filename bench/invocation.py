"""Invocation costs of the local OpenFaaS runtime, and per-iteration against loop mode.

Prints, in one run (its own runtime from bench/stack.yml on a free port, stopped at the end):
  * sync invoke latency p50 / p99 through the gateway for a no-op call (the template's echo);
  * time for emnist-setup to create a job and fan out 8 async worker invocations (202 answered);
  * time to 0.85 on Fashion-MNIST with 2 workers in per-iteration mode divided by loop mode
    (median over rounds, modes alternating). Goal (issue 4): <= 1.10.
Usage: python bench/invocation.py [--calls 300] [--rounds 3]   (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from faasgd.openfaas import GatewayClient as Gateway, wait_for_job
from faasgd.local.lifecycle import control
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.services.stores import free_port


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def sync_latency(gateway: Gateway, calls: int) -> list[float]:
    for _ in range(20):  # warm up
        gateway.invoke("echo", {})
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        answer = gateway.invoke("echo", {})
        seconds.append(time.perf_counter() - started)
        assert answer.status == 200, answer.body
    return seconds


def wait_done(gateway: Gateway, job_id: str, timeout_s: float = 600) -> dict:
    status = wait_for_job(lambda: gateway.job_status({"job_id": job_id}), timeout_s, poll_s=0.2)
    if status["state"] == "running":
        raise RuntimeError(f"job {job_id} did not finish")
    return status


def fan_out(gateway: Gateway) -> float:
    body = {"number_of_workers": 8, "dataset": "synthetic", "train_samples": 8000, "max_epochs": 1,
            "target_accuracy": 1.0}
    started = time.perf_counter()
    answer = gateway.invoke("emnist-setup", body)
    elapsed = time.perf_counter() - started
    assert answer.status == 202, answer.body
    wait_done(gateway, answer.json()["job_id"])
    return elapsed


def time_to_target(gateway: Gateway, mode: str) -> float:
    answer = gateway.invoke("emnist-setup", {"invocation_mode": mode, "number_of_workers": 2, "target_accuracy": 0.85})
    assert answer.status == 202, answer.body
    result = wait_done(gateway, answer.json()["job_id"])["result"]
    if not result["reached_target"]:
        raise RuntimeError(f"{mode}: target not reached: {result}")
    return result["time_to_target_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="faasgd-bench-")
    state, _ = control.up(UpOptions("bench/stack.yml", free_port(), directory))
    try:
        gateway = control.client(state, timeout_s=120)  # logs in to /system
        latency = sync_latency(gateway, args.calls)
        print(f"sync invoke (no-op echo) through the gateway: p50 {percentile(latency, 50) * 1e3:.2f} ms, "
              f"p99 {percentile(latency, 99) * 1e3:.2f} ms over {len(latency)} calls")
        fan = [fan_out(gateway) for _ in range(3)]
        print(f"emnist-setup creating a job and fanning out 8 async workers: median {statistics.median(fan) * 1e3:.0f} ms "
              f"(runs: {', '.join(f'{s * 1e3:.0f}' for s in fan)} ms)")
        loop, per_iteration = [], []
        for _ in range(args.rounds):
            loop.append(time_to_target(gateway, "loop"))
            per_iteration.append(time_to_target(gateway, "per-iteration"))
        ratio = statistics.median(per_iteration) / statistics.median(loop)
        print(f"time to 0.85, fashion-mnist, 2 workers: loop median {statistics.median(loop):.2f} s "
              f"({', '.join(f'{s:.2f}' for s in loop)}), per-iteration median {statistics.median(per_iteration):.2f} s "
              f"({', '.join(f'{s:.2f}' for s in per_iteration)}); per-iteration / loop = {ratio:.2f} (goal <= 1.10)")
    finally:
        control.down(directory)


if __name__ == "__main__":
    main()
