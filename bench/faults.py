"""Every fault of tests/e2e/test_faults.py in both invocation modes on both stores: how each job ended,
how long after the fault, whether it was exact (pushes = version = a fault-free run's pushes, samples
= epochs x rows) and the extra samples, and how many calls trained.

    python bench/faults.py [--only FAULT ...] [--out faults.md]

Each row is its own `faasgd up` (Community Edition delivery) and a job of 2 workers x 2000 synthetic
rows, batch 16, n_fetch = n_push = 1, 16 epochs, lease_s=2, start_timeout_s=4, max_reinvocations=3,
store_timeout_s=5. Two cores: the two workers, the stores and the runtime share them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import faults  # noqa: E402  (the fault harness the tests use)

MODES = ("loop", "per-iteration")
STORES = ("redis", "memcached")


def scenarios(tmp: Path) -> dict:
    """fault -> (runtime flags, stack, inject, run_scenario keyword arguments)."""
    exec_stack = faults.stack_copy(tmp / "exec-stack", exec_timeout_s=6)
    tiny_stack = faults.stack_copy(tmp / "tiny-stack", exec_timeout_s=3)
    return {
        "none": ((), None, faults.nothing, {}),
        "SIGKILL replica": ((), None, faults.kill_replica, {}),
        "SIGTERM replica": ((), None, faults.term_replica, {}),
        "kill -9 runtime, up": ((), None, faults.kill_runtime, {}),
        "store paused 2s": ((), None, faults.pause_store(2), {}),
        "store paused 9s": ((), None, faults.pause_store(9), {}),
        "store restarted empty": ((), None, faults.restart_store_empty, {}),
        "first delivery dropped": (("--chaos", "drop:emnist-train:1"), None, faults.nothing, {"at_epoch": 0}),
        "every call twice": (("--chaos", "duplicate:emnist-train"), None, faults.nothing, {"at_epoch": 0}),
        "exec_timeout 6s": ((), exec_stack, faults.nothing, {"at_epoch": 0, "epochs": 40}),
        "exec_timeout 3s": ((), tiny_stack, faults.nothing, {"at_epoch": 0}),
        "out of memory": ((), None, faults.cap_memory, {"at_epoch": None, "train_samples": 60000, "max_epochs": 2}),
        "crash loop": ((), None, faults.crash_loop, {}),
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
        for name, (flags, stack, inject, options) in scenarios(tmp).items():
            if args.only and name not in args.only:
                continue
            for mode in MODES:
                for store in STORES:
                    runtime = faults.fresh_runtime(tmp / f"{len(lines)}", *flags, stack=stack)
                    try:
                        outcome = faults.run_scenario(runtime, name, inject, mode, store, **options)
                    finally:
                        runtime.stop()
                    lines.append(outcome.row())
                    print(lines[-1], flush=True)
    print(f"\n{len(lines) - 2} runs in {time.monotonic() - started:.0f} s (2 cores, time-sliced)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
