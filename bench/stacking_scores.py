"""Stacking's scores over seeds, in one process: best base model vs the ensemble, per meta_c and cv_folds.

    python bench/stacking_scores.py [--seeds 0-9] [--meta-c 0 1] [--cv-folds 5 10]

The same fits the four functions make (faasgd.stacking.models), without the runtime: trainer i fits
models[i], its out-of-fold predictions train the meta-model, every score is accuracy on the held-out rows.
"Best base" is picked after the fact on those rows, so it is an upper bound no real choice would reach.
"""

from __future__ import annotations

import argparse

import numpy as np

from faasgd.stacking import models
from faasgd.stacking.config import load_stacking
from faasgd.stacking.dataset import accuracy, make_dataset


def seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def scores(seed: int, cv_folds: int, meta_cs: list[float]) -> tuple[float, list[float]]:
    config = load_stacking({}, {"seed": seed, "cv_folds": cv_folds})
    data = make_dataset(config)
    fitted = [models.fit_base(spec, seed, cv_folds, data.x_train, data.y_train) for spec in config.models]
    train = np.column_stack([oof for _, oof in fitted])
    test = np.column_stack([estimator.predict(data.x_test) for estimator, _ in fitted])
    best = max(accuracy(test[:, i], data.y_test) for i in range(test.shape[1]))
    return best, [accuracy(models.fit_meta(seed, train, data.y_train, c).predict(test), data.y_test) for c in meta_cs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--meta-c", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--cv-folds", type=int, nargs="+", default=[5, 10])
    args = parser.parse_args()
    print(f"{'cv_folds':>8} {'meta_c':>7} {'best base':>10} {'ensemble':>9} {'ens >= best':>12}")
    for cv in args.cv_folds:
        rows = [scores(seed, cv, args.meta_c) for seed in seeds(args.seeds)]
        best = np.array([b for b, _ in rows])
        for j, c in enumerate(args.meta_c):
            ensemble = np.array([e[j] for _, e in rows])
            print(f"{cv:>8} {c:>7g} {best.mean():>10.4f} {ensemble.mean():>9.4f} "
                  f"{int(np.sum(ensemble >= best - 1e-12)):>6} of {len(rows)}", flush=True)


if __name__ == "__main__":
    main()
