"""Where a job's marginal CPU goes: py-spy over every process of a short and a long job, parts by stack frames.

py-spy (a sampling profiler that reads a process's Python stacks from outside, with --subprocesses following the
forkserver's workers) samples each thread `rate` times a second, leaving out idle ones (blocked in a system call),
so a part's samples / rate are its CPU-seconds, to the rate's resolution. A sample goes to the first PART (in the
order below) one of its frames names; the rest is "other Python". The marginal split is each part's CPU-seconds in
the long job less the short one's, per sample of the difference; the store server's share is its own count; the
residual, the kernel's marginal figure of the same runs less all of those, is what no sample saw (native threads,
the kernel's work for the processes outside a Python frame, the profiler's rounding). The profiler slows what it
watches (it reads each process's memory at every sample): the split is of profiled runs, shown as shares and in
CPU-µs a sample of those runs, beside their own kernel figure.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu_account import CpuAccount

# (part, a substring of a frame), the first match of a sample's frames wins, parts in this order
PARTS: list[tuple[str, str]] = [
    ("interpreter start and imports", "<frozen importlib"),
    ("data loading", "load_shard"),
    ("data loading", "load_worker"),
    ("evaluation", "accuracy_on"),
    ("evaluation", ".evaluate ("),
    ("gradient steps", "DownpourWorker.step ("),
    ("minibatch assembly", "DownpourWorker.minibatch"),
    ("minibatch assembly", "epoch_order"),
    ("(de)serialisation and codecs", "(faasgd/store/codec.py"),
    ("(de)serialisation and codecs", "(faasgd/store/push_codec.py"),
    ("(de)serialisation and codecs", "(json/"),
    ("(de)serialisation and codecs", "(faasgd/worker/progress.py"),
    ("socket I/O", "(faasgd/store/meter.py"),
    ("socket I/O", "(faasgd/store/redis_push.py"),
    ("socket I/O", "(redis/"),
    ("socket I/O", "(pymemcache/"),
    ("the background thread (the rest of its work)", "faasgd-comm"),
    ("parameter exchange (training thread)", "(faasgd/downpour/exchange.py"),
    ("resource profile", "faasgd-profile"),
    ("the command (status, progress)", "(faasgd/cli/"),
]
ORDER = list(dict.fromkeys(part for part, _ in PARTS)) + ["other Python"]


def classify(frames: list[str]) -> str:
    for part, needle in PARTS:
        if any(needle in frame for frame in frames):
            return part
    return "other Python"


def parts_of(raw: Path, rate: int) -> dict[str, float]:
    """CPU-seconds by part from py-spy's raw output (folded stacks with counts)."""
    spent: dict[str, float] = collections.Counter()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            spent[classify(stack.split(";"))] += int(count) / rate
    return spent


def profiled(cell, epochs: int, rate: int) -> dict:
    """A `faasgd train --direct` job of `cell` under py-spy, in a CPU account with its store server."""
    from efficiency import FAASGD, ROOT, job_figures, store_cpu_s
    from faasgd.local.services.stores import start_memcached, start_redis

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    with tempfile.TemporaryDirectory() as folder, CpuAccount("faasgd-efficiency-split") as account:
        raw = Path(folder) / "raw.txt"
        server = (start_redis if cell.store == "redis" else start_memcached)()
        try:
            account.adopt(server.pid)
            before = store_cpu_s(server)
            argv = [*FAASGD, "train", "--direct", "--store-url", server.url, *cell.flags(), "--max-epochs", str(epochs),
                    "--target-accuracy", "1.0", "--json", "--quiet"]
            # py-spy outside the account (its own CPU is not the job's), the job inside: py-spy starts the command,
            # which joins the account first thing
            join = f"echo $$ > {account.folder}/cgroup.procs && exec \"$@\"" if account.folder else 'exec "$@"'
            started = time.perf_counter()
            done = subprocess.run([spy, "record", "--subprocesses", "--threads", "--nonblocking", "--rate", str(rate),
                                   "--format", "raw", "--output", str(raw), "--", "sh", "-c", join, "sh", *argv],
                                  capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - started
            after = store_cpu_s(server)
        finally:
            server.stop()
        start = done.stdout.find("{")  # py-spy's own lines come before and after the document
        document, _ = json.JSONDecoder().raw_decode(done.stdout[start:]) if start >= 0 else (None, 0)
        done.stdout = json.dumps(document)
        figures = job_figures(account.cpu_s(), wall, done, cell.name, account.clock)
        figures["parts"] = parts_of(raw, rate)
    figures["store_cpu_s"] = None if before is None or after is None else after - before
    return figures


def measure(cell, short_epochs: int, long_epochs: int, rate: int) -> tuple[list[str], dict]:
    """The marginal split of `cell` (lines of a table, the figures)."""
    short, long = profiled(cell, short_epochs, rate), profiled(cell, long_epochs, rate)
    samples = long["samples"] - short["samples"]
    kernel = (long["cpu_s"] - short["cpu_s"]) / samples
    marginal = {part: (long["parts"].get(part, 0.0) - short["parts"].get(part, 0.0)) / samples for part in ORDER}
    store = None if short["store_cpu_s"] is None or long["store_cpu_s"] is None else \
        (long["store_cpu_s"] - short["store_cpu_s"]) / samples
    marginal["the store server (its own count)"] = store or 0.0
    marginal["residual (the kernel's less the parts)"] = kernel - sum(marginal.values())
    lines = [f"profiled at {rate} Hz: kernel's marginal {kernel * 1e6:.2f} CPU-µs a sample (a profiled run: py-spy "
             f"slows what it watches)", "", "| part | CPU-µs a sample | share |", "|---|---|---|"]
    lines += [f"| {part} | {value * 1e6:.2f} | {value / kernel:.1%} |" for part, value in marginal.items()]
    return lines, {"kernel": kernel, "parts": marginal, "short": short, "long": long}
