"""The large-batch bound: how many samples synchronous data-parallel SGD needs at W x 128 rows per step.

W workers that compute their gradients at the same time cannot use each other's steps of that time:
the best any update rule can do with them is one step on their W x 128 rows together (grad_avg, which
the product tests equal to one process with a W x batch). So the samples that plain SGD with batch
W x 128 needs to reach the target, at its best learning rate, bound from below the samples of W
concurrent Downpour workers under any update rule of plain SGD steps (sum, average, any scaling).
Staleness only adds to it.

This script measures that bound on the issue's task (Fashion-MNIST, 784-100-10 tanh, 0.85 validation
accuracy on the rows the product holds out), in one process, with the product's model and data code:
  * plain SGD at batch 128, 512 (4 workers) and 1024 (8 workers) over a grid of learning rates,
    several seeds, validation every `--every` samples (finer than a worker's epoch end, the same for
    every batch size): samples to the target, and the best learning rate's ratio to batch 128 at
    lr 0.1 (the default) and at batch 128's own best learning rate;
  * the gradient noise scale B_noise = tr(Sigma) / |G|^2 (McCandlish et al. 2018, "An Empirical Model of
    Large-Batch Training") along batch 128's trajectory; their model predicts the samples at batch B as
    E_min (1 + B / B_noise), so the ratio of B to 128 is (1 + B / B_noise) / (1 + 128 / B_noise).
  * with --product, the same bound through the product itself: grad_avg jobs (faasgd train --direct's path,
    worker processes, a redis-server this script starts) at 4 and 8 workers at the best learning rate
    found, each checking the target at its epoch ends (the product's granularity: whole epochs).
Usage: python bench/batch_bound.py [--seeds 3] [--every 2560] [--max-epochs 20] [--product]
       (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from faasgd import data
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.functions import orchestrate
from faasgd.local.services.stores import start_redis
from faasgd.store import open_store
from faasgd.data.shard import validation_rows
from faasgd.model import mlp

SIZES = (784, 100, 10)
TARGET = 0.85
GRID = {128: (0.05, 0.1, 0.2, 0.4, 0.6, 0.8), 512: (0.2, 0.3, 0.4, 0.5, 0.6, 0.8), 1024: (0.3, 0.4, 0.5, 0.6, 0.8)}


def load():
    rows = data.count_rows("fashion-mnist", "train")
    held = validation_rows(rows, 0)
    train = data.load_shard("fashion-mnist", "train", 0, 1, holdout=held)
    validation = data.load_shard("fashion-mnist", "validation", 0, 1, holdout=held)
    return train, validation


def trajectory(train, validation, batch: int, lr: float, seed: int, every: int, max_epochs: int, on_check=None):
    """Plain minibatch SGD; the samples at the first validation check at or above TARGET (None: never)."""
    rng = np.random.default_rng(seed)
    weights = mlp.init_params(SIZES, rng)
    grad = np.empty_like(weights)
    samples, next_check, n = 0, every, len(train.y)
    for _ in range(max_epochs):
        order = rng.permutation(n)
        for start in range(0, n - batch + 1, batch):
            rows = order[start:start + batch]
            mlp.loss_and_grads(weights, SIZES, train.x[rows], train.y[rows], out=mlp.GradOut(grad))
            weights -= np.float32(lr) * grad
            samples += batch
            if samples >= next_check:
                next_check += every
                accuracy = mlp.accuracy(weights, SIZES, validation.x, validation.y)
                if on_check:
                    on_check(samples, weights, accuracy)
                if not np.isfinite(weights).all():
                    return None
                if accuracy >= TARGET:
                    return samples
    return None


def noise_scale(weights, train, rng, small: int = 128, draws: int = 64, big: int = 16384) -> float:
    """B_simple = tr(Sigma) / |G|^2 from gradient norms at two batch sizes (McCandlish et al., appendix A)."""
    def norm2(rows):
        _, grad = mlp.loss_and_grads(weights.astype(np.float64), SIZES, train.x[rows], train.y[rows])
        return float(grad @ grad)
    small_norm = statistics.mean(norm2(rng.choice(len(train.y), small, replace=False)) for _ in range(draws))
    big_norm = norm2(rng.choice(len(train.y), big, replace=False))
    g2 = (big * big_norm - small * small_norm) / (big - small)
    trace = (small_norm - big_norm) / (1 / small - 1 / big)
    return trace / g2 if g2 > 0 and trace > 0 else float("nan")  # noise swamped the estimate: no figure


def product_runs(rates: dict[int, float], seeds: int, max_epochs: int) -> None:
    """grad_avg through the product at 4 and 8 workers (batch 128 each) at the given learning rates."""
    print("\nthe product's grad_avg (synchronous SGD, no staleness), the target checked at epoch ends:")
    server = start_redis()
    try:
        for workers in (4, 8):
            lr = rates.get(128 * workers, 0.4)
            for seed in range(seeds):
                config = load_config(None, {"dataset": "fashion-mnist", "algorithm": "grad_avg", "seed": seed,
                                            "learning_rate": lr, "number_of_workers": workers,
                                            "target_accuracy": TARGET, "max_epochs": max_epochs,
                                            "store_url": server.url})
                with open_store(server.url) as store:
                    status = direct.run_job(config, store, orchestrate.create_job(store, config), timeout_s=1800)
                result = status.get("result") or {}
                print(f"  {workers} workers, lr {lr}, seed {seed}: samples to target {result.get('samples_to_target')} "
                      f"({result.get('epochs_to_target')} epochs), model test accuracy "
                      f"{result.get('final_test_accuracy')}", flush=True)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--every", type=int, default=2560, help="samples between validation checks")
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--product", action="store_true", help="also run grad_avg jobs through the product")
    args = parser.parse_args()
    train, validation = load()
    print(f"Fashion-MNIST 784-100-10 tanh, target {TARGET} validation ({len(validation.y)} held-out rows), "
          f"validation every {args.every} samples, {args.seeds} seeds; plain SGD, one process")
    best: dict[int, tuple[float, float]] = {}
    default = None
    print(f"{'batch':>6} {'lr':>5} {'reached':>8} {'samples to target':>22}")
    for batch, rates in GRID.items():
        for lr in rates:
            reached = [s for s in (trajectory(train, validation, batch, lr, seed, args.every, args.max_epochs)
                                   for seed in range(args.seeds)) if s is not None]
            mean = statistics.mean(reached) if len(reached) == args.seeds else None
            sd = statistics.stdev(reached) if len(reached) > 1 else 0.0
            shown = f"{mean:>12,.0f} ({sd:,.0f})" if mean is not None else "-"
            print(f"{batch:>6} {lr:>5} {len(reached):>5}/{args.seeds} {shown:>22}", flush=True)
            if mean is not None and (batch not in best or mean < best[batch][1]):
                best[batch] = (lr, mean)
            if batch == 128 and lr == 0.1:
                default = mean
    if 128 not in best:
        raise SystemExit("batch 128 did not reach the target on every seed at any learning rate: no ratios")
    print("\nbest learning rate per batch, samples as a multiple of batch 128 at lr 0.1 / at its best lr:")
    for batch, (lr, mean) in best.items():
        to_default = f"{mean / default:.2f}" if default else "-"
        print(f"  batch {batch:>5} (workers {batch // 128}): lr {lr}: {mean:,.0f} samples, "
              f"{to_default} x / {mean / best[128][1]:.2f} x")
    print("\ngradient noise scale along batch 128's trajectory at lr 0.1 (seed 0):")
    rng = np.random.default_rng(12345)
    scales: list[tuple[int, float, float]] = []

    def measure(samples, weights, accuracy):
        if not scales or samples - scales[-1][0] >= 20_000 or accuracy >= TARGET:
            scales.append((samples, accuracy, noise_scale(weights, train, rng)))
    trajectory(train, validation, 128, 0.1, 0, args.every, args.max_epochs, measure)
    for samples, accuracy, scale in scales:
        print(f"  after {samples:>7,} samples (validation {accuracy:.3f}): B_noise {scale:,.0f}; predicted "
              f"samples at 512 / 1024 vs 128: {(1 + 512 / scale) / (1 + 128 / scale):.2f} / "
              f"{(1 + 1024 / scale) / (1 + 128 / scale):.2f}")
    if args.product:
        product_runs({batch: lr for batch, (lr, _) in best.items()}, args.seeds, args.max_epochs)


if __name__ == "__main__":
    main()
