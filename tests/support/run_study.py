"""A synthetic study in the shape `faasgd predict` reads: runs over workers x period x batch size whose figures
follow known power laws (3% noise per round), and the results database test.sh would have written for them."""

from __future__ import annotations

import itertools

import numpy as np

from faasgd.batch.record import BatchRecord
from faasgd.batch.redact import Redactor
from faasgd.cli.predictor import TARGETS
from faasgd.config import TrainConfig


def law(config: dict, target_index: int, factor: float) -> float:
    """A figure that scales as a power law of workers, period and batch (its exponents differ per figure)."""
    a, b, c = 0.3 + 0.05 * target_index, -0.4 + 0.03 * target_index, 0.6 - 0.04 * target_index
    return factor * (1 + target_index) * config["number_of_workers"] ** a * config["n_push"] ** b \
        * config["batch_size"] ** c


def time_parts(run: dict, factor: float, start_s: float = 12.0) -> None:
    """The time to target as a job spends it: start_s, then samples_to_target at samples_per_s (power laws; the
    run goes on 20% past the target, its wall time and samples say the start); all scale with the factor."""
    workers, period, batch = run["number_of_workers"], run["n_push"], run["batch_size"]
    run["samples_to_target"] = factor * 2000.0 * workers ** 0.4 * period ** 0.2 * batch ** 0.3
    run["samples_per_s"] = 100.0 * workers ** 0.7 * period ** 0.3 * batch ** 0.5
    start = factor * start_s * workers ** 0.2 * period ** -0.05
    compose_time(run, start)


def compose_time(run: dict, start: float) -> None:
    run["samples"] = 1.2 * run["samples_to_target"]
    run["wall_s"] = start + run["samples"] / run["samples_per_s"]
    run["time_to_target_s"] = start + run["samples_to_target"] / run["samples_per_s"]


def study(store: str, factor: float, rounds: int = 2, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    runs = []
    for workers, period, batch in itertools.product((1, 2, 4, 8), (1, 5, 10), (64, 128, 256)):
        for round_ in range(rounds):
            config = TrainConfig(dataset="synthetic", number_of_workers=workers, n_fetch=period, n_push=period,
                                 batch_size=batch, seed=round_, store=store).to_dict()
            run = {**config, "state": "done", "config": config, "configuration": f"w{workers} p{period} b{batch}",
                   "round": round_ + 1, "varying": {}}
            for i, target in enumerate(TARGETS):
                run[target] = law(config, i, factor) * float(np.exp(rng.normal(0, 0.03)))  # 3% noise
            time_parts(run, factor)
            runs.append(run)
    return runs


def write_study(path, runs):
    record = BatchRecord(str(path), {"name": "study"}, Redactor(), lambda *a, **k: None)
    for index, run in enumerate(runs, start=1):
        record.run(index, run)
    record.finish({"name": "study"})
