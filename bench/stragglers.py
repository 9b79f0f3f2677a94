"""Stragglers: time and samples to 0.85 with one worker 2x and 4x slower, without and with the mitigation.

One table, one row per setting, medians over `--rounds` jobs each:
  workload    downpour (4 workers, global batch 128: 32 a worker, n_fetch = n_push = 10, update_rule average) and
              grad_avg (4 workers, the same batch, sync reduce: one round per minibatch), both the MLP on
              fashion-mnist, target validation accuracy 0.85
  slowed      worker 3 slowed by 1 (none), 2 or 4 (config slow_factor / slow_worker: it sleeps (factor - 1) x each
              step's time after it)
  mitigation  downpour: none or max_staleness 20 (a worker 20 steps ahead of the slowest waits); grad_avg: none or
              backup_workers 1 (a round merges the first 3 contributions; the late one is dropped)
and for each: seconds to the target (time_to_target_s: the job's timeline, Redis TIME, from its first worker call's
entry to the crossing), samples to the target, how many rounds reached it, the seconds the straggler slept and the
bound's waits. Each job runs as `faasgd train --direct` does (worker processes forked here) on a redis-server the
bench starts on a free loopback port; 4 workers on 2 cores are time-sliced. A plot of validation accuracy against
time per setting (the job's evaluations: epoch ends and Downpour's stop-rule checks) goes to
results/stragglers/accuracy_vs_time.png.

Usage: python bench/stragglers.py [--quick] [--rounds N] [--factors 1,2,4] [--workloads downpour,grad_avg]
  --quick: one round, 30,000 training rows (the table's figures then come from fewer rows)
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from faasgd import job
from faasgd.batch.runs import crossing, curve
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.local.services.stores import start_redis
from faasgd.store import open_store

RESULTS = Path("results/stragglers")
TARGET = 0.85
SLOW_WORKER = 3
BOUND = 20  # downpour's max_staleness in the mitigated rows: two push periods
COMMON = {"dataset": "fashion-mnist", "number_of_workers": 4, "global_batch_size": 128, "target_accuracy": TARGET,
          "max_epochs": 12, "seed": 1, "profile_hz": 0, "n_fetch": 10, "n_push": 10}
WORKLOADS = {"downpour": {"algorithm": "downpour"},
             "grad_avg": {"algorithm": "grad_avg", "sync": "reduce", "learning_rate": 0.1}}
MITIGATIONS = {"downpour": {"max_staleness": {"max_staleness": BOUND}}, "grad_avg": {"backup_workers": {"backup_workers": 1}}}
RUN_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Setting:
    workload: str
    factor: float
    mitigation: str  # "" or the name of the key set

    @property
    def name(self) -> str:
        slowed = "none slowed" if self.factor == 1 else f"worker {SLOW_WORKER} {self.factor:g}x"
        return f"{self.workload}, {slowed}, {self.mitigation or 'no mitigation'}"

    def overrides(self) -> dict:
        keys = {**COMMON, **WORKLOADS[self.workload], **MITIGATIONS[self.workload].get(self.mitigation, {})}
        if self.factor > 1:
            keys.update(slow_factor=self.factor, slow_worker=SLOW_WORKER)
        return keys


def settings(workloads: list[str], factors: list[float]) -> list[Setting]:
    out = []
    for workload in workloads:
        for factor in factors:
            out.append(Setting(workload, factor, ""))
            if factor > 1:
                out += [Setting(workload, factor, name) for name in MITIGATIONS[workload]]
    return out


def run_one(url: str, setting: Setting, train_samples: int) -> dict:
    """One job of `setting` to its end: its result, its accuracy curve and its crossing."""
    overrides = {**setting.overrides(), "store_url": url, **({"train_samples": train_samples} if train_samples else {})}
    config = load_config({}, overrides)
    store = open_store(url)
    job_id = job.create_job(store, config)
    status = direct.run_job(config, store, job_id, RUN_TIMEOUT_S)
    status["events"] = store.events(job_id)
    result = status["result"] or {}
    return {"setting": setting.name, "result": {k: result.get(k) for k in (
                "state", "time_to_target_s", "samples_to_target", "reached_target", "wall_s", "slowed_s",
                "bound_waits", "bound_wait_s", "late_rounds", "final_test_accuracy", "stragglers")},
            "curve": curve(status), "crossing": crossing(status)}


def median_of(runs: list[dict], key: str) -> float | None:
    values = [r["result"][key] for r in runs if r["result"].get(key) is not None]
    return statistics.median(values) if values else None


def row(setting: Setting, runs: list[dict]) -> str:
    reached = sum(bool(r["result"]["reached_target"]) for r in runs)
    time_s, samples = median_of(runs, "time_to_target_s"), median_of(runs, "samples_to_target")
    slept, waits, late = median_of(runs, "slowed_s"), median_of(runs, "bound_waits"), median_of(runs, "late_rounds")
    shown = lambda value, form: "—" if value is None else format(value, form)  # noqa: E731
    return (f"| {setting.workload} | {shown(setting.factor, 'g')}x | {setting.mitigation or 'none'} | "
            f"{shown(time_s, '.1f')} | {shown(samples, ',.0f')} | {reached}/{len(runs)} | {shown(slept, '.1f')} | "
            f"{shown(waits, '.0f')} | {shown(late, '.0f')} |")


def plot(runs: dict[str, list[dict]], path: Path) -> None:
    """Validation accuracy against seconds since the job's creation, one line per setting (its first round)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = sorted({name.split(",")[0] for name in runs})
    figure, axes = plt.subplots(1, len(workloads), figsize=(6.5 * len(workloads), 4.5), squeeze=False)
    for axis, workload in zip(axes[0], workloads):
        for name, done in runs.items():
            if name.split(",")[0] != workload or not done or not done[0]["curve"]:
                continue
            seconds, accuracy = zip(*done[0]["curve"])
            axis.plot(seconds, accuracy, marker=".", label=name.split(", ", 1)[1])
        axis.axhline(TARGET, color="grey", linestyle=":", linewidth=1)
        axis.set(title=f"{workload}: 4 workers, global batch 128", xlabel="seconds since the job's creation (Redis TIME)",
                 ylabel="validation accuracy", ylim=(0.5, 0.9))
        axis.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round on 30,000 training rows")
    parser.add_argument("--rounds", type=int, default=3, help="jobs a setting (their medians are shown)")
    parser.add_argument("--factors", default="1,2,4", help="the straggler's factors (1: none slowed)")
    parser.add_argument("--workloads", default="downpour,grad_avg")
    args = parser.parse_args()
    rounds, train_samples = (1, 30_000) if args.quick else (args.rounds, 0)
    chosen = settings(args.workloads.split(","), [float(f) for f in args.factors.split(",")])
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="stragglers-") as workdir:
        redis = start_redis(workdir=workdir)
        try:
            for setting in chosen:
                runs[setting.name] = []
                for number in range(rounds):
                    done = run_one(redis.url, setting, train_samples)
                    runs[setting.name].append(done)
                    print(f"{setting.name}, round {number + 1}: {json.dumps(done['result'])}", flush=True)
        finally:
            redis.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "runs.json").write_text(json.dumps(runs, indent=1))
    plot(runs, RESULTS / "accuracy_vs_time.png")
    rows = "\n".join(row(setting, runs[setting.name]) for setting in chosen)
    print(f"\nmedians of {rounds} round(s){', --quick (30,000 training rows)' if args.quick else ''}; time: the job's "
          "timeline (Redis TIME), first worker call to the crossing; 4 workers on 2 cores are time-sliced\n")
    print("| workload | straggler | mitigation | s to 0.85 | samples to 0.85 | reached | straggler slept s | "
          "bound waits | late rounds |\n|---|---|---|---|---|---|---|---|---|\n" + rows)
    print(f"\nplot: {RESULTS / 'accuracy_vs_time.png'}")


if __name__ == "__main__":
    main()
