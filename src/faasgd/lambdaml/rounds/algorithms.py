"""One worker's synchronous training: gradient averaging and model averaging over an Exchange.

    state = RoundState(params)                                   # round_no 0: nothing run yet
    outcome = grad_avg_round(state, grad, exchange, lr=0.1)      # one round (one invocation's work)
    state, totals, losses = run_rounds("model_avg", state, grad, exchange, lr=0.1, rounds=50, local_steps=4)

The model is a gradient function `grad(params, batch_index) -> (loss, grad)` over a flat float32
vector; `batch_index` counts this worker's minibatches from 0 and the function maps it to its own
shard (so data order is the caller's, and deterministic). A round is a pure step over RoundState
(parameters + rounds done): a caller runs many in one loop, or one per invocation, checkpointing the
state in between; a round re-run from the same state re-enters the same exchange round (see exchange.py).

- grad_avg (synchronous SGD): in round r every worker takes the gradient of minibatch r at the shared
  parameters, the gradients are averaged, every worker applies params -= lr * mean; all workers hold
  the same bits after every round.
- model_avg (local SGD): in round r every worker takes `local_steps` plain SGD steps on its minibatches
  r*local_steps .. r*local_steps + local_steps - 1, then the parameter vectors are averaged.
- consensus_round: the round structure both share, open to other algorithms: ADMM's z-merge is one
  (the local solve and the z- and u-updates are the model's math, e.g. faasgd.lambdaml.convex.admm; see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from faasgd.checks import positive_number, whole_number
from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds.exchange import Exchange, RoundStats

GradFn = Callable[[np.ndarray, int], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class RoundState:
    """A worker's resumable state: its parameters after `round_no` rounds (the same on every worker)."""

    params: np.ndarray  # flat float32 parameters
    round_no: int = 0  # rounds completed, i.e. the next round to run


@dataclass(frozen=True)
class RoundOutcome:
    state: RoundState  # the state after the round
    loss: float  # mean of this worker's minibatch losses in the round (before each step)
    stats: RoundStats  # what the round's exchange cost this worker


def consensus_round(state: RoundState, exchange: Exchange,
                    contribute: Callable[[np.ndarray, int], tuple[float, np.ndarray]],
                    combine: Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]) -> RoundOutcome:
    """One round: `contribute(params, round_no) -> (loss, vector)` locally, the vectors merged over the
    workers (the exchange's op), then `combine(params, vector, merged, round_no) -> new params`.

    ADMM fits as: params = [z | u_i], vector = x_i + u_i from the local solve at (z, u_i), and combine
    returns [z' | vector - z'] with z' the z-update of `merged` (the model's math, not here)."""
    params = check_params(state.params)
    loss, vector = contribute(params, state.round_no)
    vector = np.asarray(vector, dtype=np.float32)
    merged, stats = exchange.all_reduce(state.round_no, vector)
    new = check_params(combine(params, vector, merged, state.round_no))
    return RoundOutcome(RoundState(new, state.round_no + 1), float(loss), stats)


def grad_avg_round(state: RoundState, grad: GradFn, exchange: Exchange, *, lr: float) -> RoundOutcome:
    """Synchronous SGD: the mean gradient of every worker's minibatch `round_no`, applied by every worker."""
    step = np.float32(check_lr(lr))
    return consensus_round(state, exchange,
                           grad, lambda params, own_grad, mean, r: params - step * mean)


def model_avg_round(state: RoundState, grad: GradFn, exchange: Exchange, *, lr: float,
                    local_steps: int = 1) -> RoundOutcome:
    """Local SGD: `local_steps` steps on this worker's own minibatches, then the models averaged."""
    step, local_steps = np.float32(check_lr(lr)), check_local_steps(local_steps)

    def local(params: np.ndarray, r: int) -> tuple[float, np.ndarray]:
        losses = []
        for k in range(local_steps):
            loss, g = grad(params, r * local_steps + k)
            params = params - step * g
            losses.append(float(loss))
        return sum(losses) / len(losses), params

    return consensus_round(state, exchange, local, lambda params, local_model, mean, r: mean)


def taken_round(algorithm: str, state: RoundState, merged: np.ndarray, stats: RoundStats, *,
                lr: float) -> RoundOutcome:
    """A round merged without this worker (backup workers: Exchange.merged_if_ready), applied as its own rounds
    apply a merge: grad_avg steps by the mean gradient, model_avg takes the mean model. No loss (nothing computed)."""
    if algorithm == "grad_avg":
        new = state.params - np.float32(check_lr(lr)) * merged
    elif algorithm == "model_avg":
        new = merged
    else:
        raise ConfigError("algorithm", f"a round is taken as merged in grad_avg or model_avg, got {algorithm!r}")
    return RoundOutcome(RoundState(check_params(new), state.round_no + 1), float("nan"), stats)


ALGORITHMS = ("grad_avg", "model_avg")


def run_rounds(algorithm: str, state: RoundState, grad: GradFn, exchange: Exchange, *, lr: float, rounds: int,
               local_steps: int = 1,
               on_round: Callable[[RoundOutcome], None] | None = None) -> tuple[RoundState, RoundStats, list[float]]:
    """Run `rounds` rounds from `state` in one loop; `on_round` sees each outcome (to checkpoint or record).
    Returns the final state, the summed stats and each round's loss."""
    if algorithm not in ALGORITHMS:
        raise ConfigError("algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    whole_number(rounds, "rounds", low=0)
    check_lr(lr), check_local_steps(local_steps)
    totals, losses = RoundStats(), []
    for _ in range(rounds):
        if algorithm == "grad_avg":
            outcome = grad_avg_round(state, grad, exchange, lr=lr)
        else:
            outcome = model_avg_round(state, grad, exchange, lr=lr, local_steps=local_steps)
        state, totals = outcome.state, totals + outcome.stats
        losses.append(outcome.loss)
        if on_round is not None:
            on_round(outcome)
    return state, totals, losses


def check_params(params: np.ndarray) -> np.ndarray:
    if not isinstance(params, np.ndarray) or params.dtype != np.float32 or params.ndim != 1:
        raise ConfigError("params", f"must be a flat float32 array, got {getattr(params, 'dtype', type(params))}")
    return params


def check_lr(lr: float) -> float:
    return positive_number(lr, "lr")


def check_local_steps(local_steps: int) -> int:
    return whole_number(local_steps, "local_steps", low=1)
