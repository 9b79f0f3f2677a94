"""How long emnist-setup takes to answer a job of many workers, and where that time goes.

The setup call creates the job and POSTs one `/async-function/emnist-train` call per worker through the gateway,
which publishes each to JetStream and answers 202 once the broker acknowledged it; the setup call answers once
every worker is queued. This bench runs its own runtime (stack.yml's training functions, a free port, a folder of
its own, stopped at the end) and, per worker count, times one setup call of a per-iteration job (loop mode admits
at most worker_slots workers) on a small synthetic set: its wall time at the client (time.perf_counter around the
POST), and the job's own record of the fan-out. The workers the queue delivers meanwhile share the cores with the
fan-out, as they do in use; the job is left to end (or is stopped with the runtime) after the figure is taken.
`--queue-only` leaves emnist-setup and the workers out: the bench itself POSTs N async calls of bench/stack.yml's
no-op `echo` (the gateway answers 202 once JetStream acknowledged each; the queue delivers each to echo, which
answers at once), one at a time and 16 at a time, twice each alternating: the gateway's and the broker's own cost
per call, with a delivery beside it that costs next to nothing.
`--profile` samples the runtime's daemon (gateway and queue) with py-spy during the call (`py-spy record --format
raw`, 100 Hz) and prints its top frames.
Usage: python bench/fanout.py [--workers 256 1024] [--profile | --queue-only]     (from the repository root)
"""

from __future__ import annotations

import argparse
import collections
import json
import threading
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from faasgd.local.lifecycle import control
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient

ROOT = Path(__file__).resolve().parent.parent


def job_body(workers: int) -> dict:
    return {"number_of_workers": workers, "invocation_mode": "per-iteration", "dataset": "synthetic",
            "train_samples": max(2000, 8 * workers), "test_samples": 200, "validation_samples": 200,
            "hidden_sizes": [8], "max_epochs": 1, "target_accuracy": 1.0, "profile_hz": 0,
            "start_timeout_s": 600}


def profile(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    return subprocess.Popen(["py-spy", "record", "-p", str(pid), "-d", str(int(seconds) + 1), "-r", "100",
                             "--format", "raw", "-o", str(out), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def top_frames(raw: Path, count: int = 8) -> list[tuple[str, int]]:
    """The leaf-most frames of faasgd, httpx, nats or asyncio code that hold the most samples."""
    totals: collections.Counter = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = stack.split(";")
        interesting = [f for f in frames if any(k in f for k in ("faasgd", "httpx", "nats", "asyncio", "socket",
                                                                  "waitress", "select"))]
        totals[(interesting or frames)[-1]] += int(samples)
    return totals.most_common(count)


def one_setup(gateway: GatewayClient, workers: int, state: dict, do_profile: bool, folder: Path) -> dict:
    spies = []
    if do_profile:
        targets = {"daemon": state["pid"]}  # a replica's pid is its of-watchdog's (Go), which py-spy cannot read
        spies = [(name, folder / f"{name}-{workers}.txt") for name in targets]
        spies = [(name, out, profile(targets[name], max(5.0, workers / 20), out)) for name, out in spies]
        time.sleep(0.5)
    began = time.perf_counter()
    answer = gateway.invoke("emnist-setup", job_body(workers))
    seconds = time.perf_counter() - began
    if answer.status != 202:
        raise SystemExit(f"setup answered {answer.status}: {answer.body[:500]!r}")
    figures = {"workers": workers, "setup_s": round(seconds, 3), "per_call_ms": round(seconds / workers * 1e3, 2)}
    for name, out, spy in spies:
        spy.wait(timeout=120)
        if out.is_file():
            figures[f"top_{name}"] = top_frames(out)
    return figures


def queue_only(gateway: GatewayClient, calls: int, in_flight: int) -> dict:
    """`calls` async calls of echo, `in_flight` at a time; the seconds until all were answered (202)."""
    numbers, lock = iter(range(calls)), threading.Lock()

    def work() -> None:
        while True:
            with lock:
                number = next(numbers, None)
            if number is None:
                return
            gateway.invoke_async("echo", {"n": number})
    began = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(in_flight)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    return {"workers": calls, "in_flight": in_flight, "setup_s": round(seconds, 3),
            "per_call_ms": round(seconds / calls * 1e3, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--queue-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="faasgd-fanout-"))
    rows = []
    for workers in args.workers:  # a fresh runtime per count: the previous job's workers are not in the queue
        directory = folder / f"rt-{workers}"
        stack, only = (ROOT / "bench" / "stack.yml", "echo") if args.queue_only else (ROOT / "stack.yml", "emnist-*")
        state, _ = control.up(UpOptions(str(stack), free_port(), str(directory), only=only, wait=True))
        try:
            gateway = control.client(state, timeout_s=600)
            if args.queue_only:
                rows += [queue_only(gateway, workers, in_flight) for in_flight in (1, 16, 1, 16)]
            else:
                rows.append(one_setup(gateway, workers, control.read_state(directory), args.profile, folder))
        finally:
            control.down(str(directory))
    if args.json:
        print(json.dumps(rows))
        return
    for row in rows:
        if "in_flight" in row:
            print(f"{row['workers']:>5} async calls, {row['in_flight']:>2} in flight: all answered in "
                  f"{row['setup_s']:.2f} s ({row['per_call_ms']:.2f} ms a call)")
            continue
        print(f"{row['workers']:>5} workers: setup answered in {row['setup_s']:.2f} s ({row['per_call_ms']:.1f} ms "
              f"a worker)")
        for frame, samples in row.get("top_daemon", []):
            print(f"      daemon {samples:>6}  {frame}")


if __name__ == "__main__":
    sys.exit(main())
