"""The single-process oracle for one Downpour worker under each update rule, on small synthetic data.

One worker with n_fetch = n_push = `period`: it steps its local copy with plain SGD (each step's update
u = -lr g, the gradient computed times -lr as the workers compute it) and sums its updates; every `period`
steps (and at an epoch's end, for the rest) the sum is applied to the global parameters by the rule, and the
worker continues from them:
  sum, average (one worker: / 1)   w += u_sum                                      plain SGD at period 1
  adagrad                          g = u_sum / -lr; G += g^2; w += u_sum / (sqrt(G) + eps)   AdaGrad at period 1
All in float32 from the job's seeded initial parameters, the worker's RNG default_rng(seed + 0).

AdaGrad runs at learning_rate 0.01 here: at 0.1 its first steps (about lr x sign(g) on every weight) make
this tiny network chaotic, so a one-ulp difference in G (the store recovers g = -d / lr from the pushed
delta) grows to 0.2 within two epochs, in the oracle alone; at 0.01 it stays below 1e-6.
"""

from __future__ import annotations

import numpy as np

from faasgd import data, job, model
from faasgd.config import load_config
from faasgd.store.update_rule import ADAGRAD_EPS, ADAGRAD_G0


def small_config(store_url: str, update_rule: str, period: int = 1, **overrides):
    values = {
        "dataset": "synthetic", "train_samples": 600, "test_samples": 200, "hidden_sizes": [16],
        "batch_size": 40, "number_of_workers": 1, "n_fetch": period, "n_push": period,
        "max_epochs": 2, "target_accuracy": 1.0, "store_url": store_url, "store_timeout_s": 2.0,
        "update_rule": update_rule, "learning_rate": 0.01 if update_rule == "adagrad" else 0.1,
        "communication": "blocking",  # the oracle's schedule: right after each push the worker goes on from w
    }
    values.update(overrides)
    return load_config({}, values)


def one_worker(config, epochs: int) -> np.ndarray:
    """The global parameters after `epochs` epochs of one worker under config.update_rule, in one process."""
    sizes = job.network_sizes(config)
    lr = np.float32(config.learning_rate)
    w = model.init_params(sizes, np.random.default_rng(config.seed), config.activation)
    squares = np.full_like(w, ADAGRAD_G0)
    shard = data.load_shard(config.dataset, "train", 0, 1, limit=config.train_samples,
                            holdout=job.holdout(config)[1])  # the validation rows are never trained on
    rng = np.random.default_rng(config.seed + 0)

    def apply(u_sum):  # the period's updates (-lr g each) summed, as the store receives them
        nonlocal w, squares
        if config.update_rule == "adagrad":
            g_sum = u_sum / -lr
            squares = squares + g_sum * g_sum
            w = w + u_sum / (np.sqrt(squares) + np.float32(ADAGRAD_EPS))
        else:
            w = w + u_sum / np.float32(config.number_of_workers)

    step = 0  # the worker's step count runs on across epochs: pushes fall on its multiples of n_push
    for _ in range(epochs):
        order = rng.permutation(len(shard.y))
        local, u_sum, unpushed = w.copy(), np.zeros_like(w), 0
        for first in range(0, len(order), config.batch_size):
            rows = order[first:first + config.batch_size]
            _, update = model.loss_and_grads(local, sizes, shard.x[rows], shard.y[rows], config.activation,
                                             config.dropout, rng,
                                             model.GradOut(np.empty_like(local), -config.learning_rate))  # -lr g
            local, u_sum, step, unpushed = local + update, u_sum + update, step + 1, unpushed + 1
            if step % config.n_push == 0:
                apply(u_sum)
                local, u_sum, unpushed = w.copy(), np.zeros_like(w), 0
        if unpushed:  # an epoch ends with a push of the rest
            apply(u_sum)
    return w


def assert_matches(config, got: np.ndarray, expected: np.ndarray) -> None:
    """sum / average at period 1: bit for bit; otherwise (adagrad recovers g = -d / lr; a period's pushed
    delta is a float32 sum of -lr g) to float32 rounding."""
    if config.update_rule != "adagrad" and config.n_push == 1:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=2e-6)
