"""Every fault of tests/e2e/test_faults.py in both invocation modes on both stores: how each job ended,
how long after the fault, whether it was exact (pushes = version = a fault-free run's pushes, samples
= epochs x rows) and the extra samples, and how many calls trained.

    python bench/faults.py [--only FAULT ...] [--out faults.md]

As in the tests, each fault gets its own `faasgd up` (Community Edition delivery) and strikes four
jobs at once (loop and per-iteration, Redis and Memcached), each 2 workers x 1000 synthetic rows,
batch 16, n_fetch = n_push = 1, 8 epochs, lease_s=2, start_timeout_s=4, max_reinvocations=3,
store_timeout_s=5; a dropped delivery hits one job, so that fault runs once per job. Eight workers,
the stores and the runtime share two cores (time-sliced).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from faasgd.testing import fault_matrix, faults  # the fault harness the tests use

ROOT = Path(__file__).resolve().parents[1]  # the project each runtime runs: stack.yml, template/, handlers


def scenarios(tmp: Path) -> dict:
    """fault -> (runtime flags, stack, inject, run_matrix keyword arguments, one runtime per job)."""
    return {
        "none": ((), None, faults.nothing, {}, False),
        "SIGKILL replica": ((), None, faults.kill_replica, {}, False),
        "SIGTERM replica": ((), None, faults.term_replica, {}, False),
        "kill -9 runtime, up": ((), None, faults.kill_runtime, {}, False),
        "stores paused 2s": ((), None, faults.pause_store(2), {}, False),
        "stores paused 9s": ((), None, faults.pause_store(9), {}, False),
        "stores restarted empty": ((), None, faults.restart_store_empty, {}, False),
        "first delivery dropped": (("--chaos", "drop:emnist-train:1"), None, faults.nothing, {"at_epoch": 0}, True),
        "every call twice": (("--chaos", "duplicate:emnist-train"), None, faults.nothing, {"at_epoch": 0}, False),
        "exec_timeout 4s": ((), fault_matrix.stack_copy(ROOT, tmp / "exec4", exec_timeout_s=4), faults.nothing,
                            {"at_epoch": 0, "train_samples": 8000}, False),
        "exec_timeout 3s": ((), fault_matrix.stack_copy(ROOT, tmp / "exec3", exec_timeout_s=3), faults.nothing,
                            {"at_epoch": 0}, False),
        "out of memory": ((), None, faults.cap_memory, {"at_epoch": None, "train_samples": 60000, "max_epochs": 2},
                          False),
        "crash loop": ((), None, faults.crash_loop, {}, False),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these faults (names as in the table)")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    lines = ["| fault | mode | store | ended | s after fault | exact | extra samples | calls that trained | reason |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="faasgd-faults-") as folder:
        tmp = Path(folder)
        for name, (flags, stack, inject, options, one_each) in scenarios(tmp).items():
            if args.only and name not in args.only:
                continue
            for combos in ([[combo] for combo in fault_matrix.COMBOS] if one_each else [fault_matrix.COMBOS]):
                runtime = fault_matrix.fresh_runtime(ROOT, tmp / str(len(lines)), *flags, stack=stack)
                try:
                    outcomes = fault_matrix.run_matrix(runtime, name, inject, combos=combos, **options)
                finally:
                    runtime.stop()
                for outcome in outcomes:
                    lines.append(outcome.row())
                    print(lines[-1], flush=True)
    print(f"\n{len(lines) - 2} runs in {time.monotonic() - started:.0f} s (2 cores, time-sliced)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
