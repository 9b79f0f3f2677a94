"""The tables of bench/peers.py: rows alternated over rounds, their medians, the ratios of time to target.

A row is what one of bench/peers.py's runners returns: time_to_target_s (None when never reached) and ready_s on
CLOCK_MONOTONIC from the bench's launch of the row's process, samples_per_s, final_accuracy, peak_rss_mb (one per
process), passes_to_target (the passes over the training rows after which the test accuracy first reached the
target: every row evaluates the test rows once a pass, so its time to target is its ready time plus that many
passes), and for the torch rows param_digests (one per process).
"""

from __future__ import annotations

import statistics
from pathlib import Path
import subprocess
import sys

# where faasgd's workers' time went (the job's result: perf_counter parts within the workers' calls, job timeline)
SPLIT_KEYS = ("worker_s", "compute_s", "batches_s", "eval_s", "load_s", "comm_wait_s")
THREADS = {"numpy": "1 BLAS", "torch": "1 (set_num_threads)", "keras": "TF default", "torch-ddp": "2 procs x 1",
           "faasgd": "2 workers x 1 BLAS", "faasgd-64": "2 workers x 1 BLAS", "direct-64": "2 procs x 1 BLAS"}


def alternate(roles: tuple[str, ...], rounds: int, run) -> dict[str, list[dict]]:
    """`run(role)` for every role once a round, round r starting at role r (mod len): drifts fall on every role."""
    runs = {role: [] for role in roles}
    for r in range(rounds):
        for role in roles[r % len(roles):] + roles[:r % len(roles)]:
            runs[role].append(run(role))
    return runs


def summarise(runs: list[dict]) -> dict:
    """The median over a role's rounds, the spread of its times to target, how many rounds reached it. The factors
    of the time to target (ready, passes) are medians over the same rounds as that time, those that reached the
    target, so `pass_seconds` combines figures of one set of runs; rates and accuracy are over every round run."""
    done = [run for run in runs if "error" not in run]
    if not done:
        return {"error": runs[-1]["error"]}
    reached = [run for run in done if run["time_to_target_s"] is not None]
    times = sorted(run["time_to_target_s"] for run in reached)

    def median(key: str, over: list[dict] = done) -> float:
        return statistics.median(run[key] for run in over)

    passes = [run["passes_to_target"] for run in reached if run.get("passes_to_target") is not None]
    return {"time_to_target_s": statistics.median(times) if times else None, "spread": times[::len(times) - 1 or 1],
            "passes_to_target": statistics.median(passes) if passes else None,
            "reached": f"{len(times)}/{len(runs)}", "ready_s": median("ready_s", reached or done),
            "samples_per_s": median("samples_per_s"), "final_accuracy": median("final_accuracy"),
            "peak_rss_mb": max(run["peak_rss_mb"] for run in done),
            "same_params": all(len(set(run.get("param_digests", [""]))) == 1 for run in done),
            "split": {key: statistics.median(run["split"][key] for run in done) for key in SPLIT_KEYS}
            if all("split" in run for run in done) else None}


def ratio(rows: dict, a: str, b: str) -> str:
    ta, tb = rows[a].get("time_to_target_s"), rows[b].get("time_to_target_s")
    return f"{ta / tb:.2f}" if ta and tb else "-"


def print_mlp(rows: dict[str, dict], target: float) -> None:
    """The MLP table (summarised rows), the ratios of time to target, DDP's ranks, faasgd's memory budget."""
    print("times on CLOCK_MONOTONIC (time.monotonic) from just before the bench starts the row's process; ready: "
          "to the first training step (faasgd: to the setup call)")
    print("passes: over the training rows until the test accuracy (evaluated once a pass) first reached the target; "
          "s a pass: (to target - ready) / passes, medians of each (the faasgd rows' ready ends at their setup call, "
          "so their job's start, its workers' data loading among it, is in their seconds a pass)")
    print(f"{'':<9} {'threads':<18} {'ready (s)':>9} {f'to {target} (s)':>11} {'[min-max]':>11} {'reached':>7} "
          f"{'passes':>6} {'s a pass':>8} {'samples/s':>10} {'final acc':>9}  peak RSS per process (MB)")
    for role, row in rows.items():
        if "error" in row:
            print(f"{role:<9} failed: {row['error']}")
            continue
        ttt, spread = row["time_to_target_s"], "-".join(f"{t:.1f}" for t in row["spread"]) or "-"
        passes, per_pass = row.get("passes_to_target"), pass_seconds(row)
        print(f"{role:<9} {THREADS[role]:<18} {row['ready_s']:>9.2f} {'-' if ttt is None else f'{ttt:.2f}':>11} "
              f"{spread:>11} {row['reached']:>7} {'-' if passes is None else f'{passes:g}':>6} "
              f"{'-' if per_pass is None else f'{per_pass:.2f}':>8} {row['samples_per_s']:>10,.0f} "
              f"{row['final_accuracy']:>9.4f}  {', '.join(f'{m:.0f}' for m in row['peak_rss_mb'])}")
    print(f"time to {target}: faasgd / numpy limit = {ratio(rows, 'faasgd', 'numpy')} (goal <= 1.5); keras / faasgd "
          f"= {ratio(rows, 'keras', 'faasgd')}, torch / faasgd = {ratio(rows, 'torch', 'faasgd')}, torch-ddp / "
          f"faasgd = {ratio(rows, 'torch-ddp', 'faasgd')} (goals >= 2)")
    for role in ("faasgd-64", "direct-64"):  # the same goals at numpy's 128 rows per move of the model
        if role in rows:
            goal = " (goal <= 0.8)" if role == "direct-64" else ""
            print(f"{role} (64 rows a step per worker): {role} / numpy = {ratio(rows, role, 'numpy')}{goal}; keras / "
                  f"{role} = {ratio(rows, 'keras', role)}, torch / {role} = {ratio(rows, 'torch', role)}, torch-ddp / "
                  f"{role} = {ratio(rows, 'torch-ddp', role)}")
    for role in ("faasgd", "faasgd-64", "direct-64"):  # the ratio in its three factors: start, passes, a pass's time
        if role in rows and "error" not in rows[role] and "error" not in rows["numpy"]:
            print(against_numpy(rows, role))
    if "error" not in rows["torch-ddp"]:
        same = "yes" if rows["torch-ddp"]["same_params"] else "NO"
        print(f"torch-ddp: the ranks ended with identical parameters: {same}")
    for role in ("faasgd", "faasgd-64", "direct-64"):
        if role in rows and "error" not in rows[role] and rows[role].get("split"):
            print_split(rows[role]["split"], role)
    if "error" not in rows["faasgd"]:
        # what a worker replica holds: its imports (the template's shim, the handler, the worker and a store client:
        # measured in a fresh interpreter), the raw uint8 rows (its half of 55,000 training rows, the 5,000
        # validation and 10,000 test rows) and the parameter buffers (weights, fetched, pending, sending, gradient)
        rows_mb = (55000 // 2 + 5000 + 10000) * 784 / 2**20
        params_mb = 79510 * 4 / 2**20
        budget = 1.5 * (rows_mb + 5 * params_mb + replica_imports_mb())
        print(f"worker peak RSS {max(rows['faasgd']['peak_rss_mb']):.0f} MB against the budget 1.5 x (uint8 rows "
              f"{rows_mb:.0f} + 5 x params {params_mb:.1f} + a replica's imports) = {budget:.0f} MB")


def against_numpy(rows: dict[str, dict], role: str) -> str:
    """Where `role`'s time to target differs from numpy's: its ready time, its passes to the target, its seconds a
    pass (time to target = ready + passes x s a pass, for each row)."""
    row, numpy = rows[role], rows["numpy"]

    def both(a, b, form):
        shown = lambda v: "-" if v is None else format(v, form)  # noqa: E731
        times = f" ({a / b:.2f} x)" if a is not None and b else ""
        return f"{shown(a)} against {shown(b)}{times}"

    return (f"{role} against numpy: ready (s) {both(row['ready_s'], numpy['ready_s'], '.2f')}; passes "
            f"{both(row.get('passes_to_target'), numpy.get('passes_to_target'), 'g')}; s a pass "
            f"{both(pass_seconds(row), pass_seconds(numpy), '.2f')}")


def pass_seconds(row: dict) -> float | None:
    """A summarised row's seconds a pass over the training rows on its way to the target (training, the pass's test
    evaluation and, for faasgd, the exchanges with the store): (time to target - ready) / passes to target."""
    ttt, passes = row.get("time_to_target_s"), row.get("passes_to_target")
    return (ttt - row["ready_s"]) / passes if ttt is not None and passes else None


def print_split(split: dict, role: str = "faasgd") -> None:
    """Where faasgd's workers' calls went: each part's seconds and share of worker_s; the rest, named."""
    worker_s = split["worker_s"] or float("nan")
    parts = {"gradient steps": split["compute_s"], "minibatches": split["batches_s"], "evaluations": split["eval_s"],
             "data loading": split["load_s"], "waiting on the store": split["comm_wait_s"]}
    rest = worker_s - sum(parts.values())
    shown = ", ".join(f"{name} {s:.2f} s ({s / worker_s:.0%})" for name, s in parts.items())
    print(f"{role} workers' calls, {worker_s:.2f} worker-s (job timeline; parts on perf_counter, medians): {shown}; "
          f"the rest (records, submitting operations, the loop) {rest:.2f} s ({rest / worker_s:.0%})")


def print_cnn(rows: dict[str, dict], target: float, lower: tuple[float, ...]) -> None:
    """The CNN table: keras-cnn against faasgd-cnn, time to `target` and to each of the `lower` accuracies."""
    print(f"{'':<10} {f'to {target} (s)':>11} {'samples/s':>11} {'final acc':>9} {'epochs':>7}  "
          "peak RSS per process (MB)")
    for role, row in rows.items():
        if "error" in row:
            print(f"{role:<10} failed: {row['error']}")
            continue
        ttt, seen = row["time_to_target_s"], row.get("epochs")
        print(f"{role:<10} {'-' if ttt is None else f'{ttt:.2f}':>11} {row['samples_per_s']:>11,.0f} "
              f"{row['final_accuracy']:>9.4f} {'-' if seen is None else f'{seen:.1f}':>7}  "
              f"{', '.join(f'{m:.0f}' for m in row['peak_rss_mb'])}")
    print(f"time to {target}: faasgd-cnn / keras-cnn = {ratio(rows, 'faasgd-cnn', 'keras-cnn')} (goal <= 1.5)")
    for accuracy in lower:
        ta, tb = (rows[r].get("lower", {}).get(str(accuracy)) for r in ("faasgd-cnn", "keras-cnn"))
        print(f"time to {accuracy}: faasgd-cnn {'-' if ta is None else f'{ta:.1f}'} s, keras-cnn "
              f"{'-' if tb is None else f'{tb:.1f}'} s, ratio {f'{ta / tb:.2f}' if ta and tb else '-'}")


def replica_imports_mb() -> float:
    """Peak RSS of a fresh interpreter after a worker replica's imports: the handler, the worker, a store client
    and the web server the template's shim runs (flask, waitress)."""
    handler = Path(__file__).resolve().parents[1] / "emnist-train"
    code = (f"import resource, sys; sys.path.insert(0, {str(handler)!r}); "
            "import flask, waitress, handler, faasgd.downpour.worker, faasgd.store.redis_store; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
