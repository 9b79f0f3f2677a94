"""grad_avg and model_avg over the real MLP, one thread per worker, against single-process oracles."""

from __future__ import annotations

import numpy as np
import pytest

from support.rounds_drive import FAST, Killed, KillOnce, exchanges, in_threads, memory_url, new_job, values
from faasgd.errors import ConfigError
from faasgd.model import mlp
from faasgd.lambdaml.rounds import (Exchange, ExchangeConfig, RoundState, consensus_round, grad_avg_round, model_avg_round,
                           run_rounds)
from faasgd.store import open_store

SIZES, N, B, STEPS, LR = (6, 12, 3), 3, 4, 8, 0.2


def problem(seed: int = 0):
    """Initial parameters and N shards of STEPS*B rows each (shard w: worker w's minibatches in order)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, STEPS * B, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], size=(N, STEPS * B))
    return mlp.init_params(SIZES, rng), x, y


def worker_grad(x, y, w):
    """Worker w's gradient function: batch i is rows i*B..(i+1)*B of its shard (wrapping round)."""
    def grad(params, i):
        rows = slice((i % STEPS) * B, (i % STEPS + 1) * B)
        return mlp.loss_and_grads(params, SIZES, x[w, rows], y[w, rows])
    return grad


def one_process(params, x, y, steps):
    """The oracle: one process, batch i = the N workers' minibatches i concatenated (N*B rows)."""
    trace = []
    for i in range(steps):
        rows = slice(i * B, (i + 1) * B)
        _, g = mlp.loss_and_grads(params, SIZES, np.concatenate(x[:, rows]), np.concatenate(y[:, rows]))
        params = params - np.float32(LR) * g
        trace.append(params)
    return trace


def traced(algorithm, pattern, params, x, y, rounds=STEPS, **kw):
    """Each worker's parameters after every round."""
    ex = exchanges(memory_url(), new_job(), N, pattern)

    def work(w):
        trace = []
        run_rounds(algorithm, RoundState(params.copy()), worker_grad(x, y, w), ex[w], lr=LR, rounds=rounds,
                   on_round=lambda o: trace.append(o.state.params), **kw)
        return trace
    return values(in_threads(N, work))


@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_grad_avg_equals_one_process_with_n_times_the_batch_step_for_step(pattern):
    params, x, y = problem()
    oracle = one_process(params, x, y, STEPS)
    traces = traced("grad_avg", pattern, params, x, y)
    for step in range(STEPS):
        for w in range(1, N):
            assert traces[w][step].tobytes() == traces[0][step].tobytes()  # every worker holds the same bits
        np.testing.assert_allclose(traces[0][step], oracle[step], rtol=0, atol=1e-6)
    assert np.abs(traces[0][-1] - params).max() > 1e-2  # the run moved: the comparison means something


def test_model_avg_averaging_every_step_equals_grad_avg():
    params, x, y = problem(1)
    grad_avg = traced("grad_avg", "reduce", params, x, y)[0]
    model_avg = traced("model_avg", "reduce_scatter", params, x, y, local_steps=1)
    for step in range(STEPS):
        assert all(model_avg[w][step].tobytes() == model_avg[0][step].tobytes() for w in range(N))
        np.testing.assert_allclose(model_avg[0][step], grad_avg[step], rtol=0, atol=1e-6)


def test_model_avg_with_local_steps_averages_each_workers_local_sgd():
    params, x, y = problem(2)
    local_steps, rounds = 3, 2
    trace = traced("model_avg", "reduce", params, x, y, rounds=rounds, local_steps=local_steps)[0]
    want = params
    for r in range(rounds):
        ends = []
        for w in range(N):
            p, grad = want, worker_grad(x, y, w)
            for k in range(local_steps):
                p = p - np.float32(LR) * grad(p, r * local_steps + k)[1]
            ends.append(p.astype(np.float64))
        want = (sum(ends) / N).astype(np.float32)
        np.testing.assert_allclose(trace[r], want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("round_fn", ["grad_avg", "model_avg"])
def test_one_round_per_invocation_resumes_to_the_same_bits_as_a_loop(round_fn):
    params, x, y = problem(3)
    looped = traced(round_fn, "reduce", params, x, y, rounds=4, local_steps=2)[0][-1]
    url, job = memory_url(), new_job()
    checkpoints = [RoundState(params.copy()).params.tobytes()] * N  # what each worker keeps between invocations
    for r in range(4):
        ex = exchanges(url, job, N, "reduce")  # a new invocation: new clients, state from the checkpoint

        def invocation(w):
            state = RoundState(np.frombuffer(checkpoints[w], dtype=np.float32).copy(), r)
            if round_fn == "grad_avg":
                out = grad_avg_round(state, worker_grad(x, y, w), ex[w], lr=LR)
            else:
                out = model_avg_round(state, worker_grad(x, y, w), ex[w], lr=LR, local_steps=2)
            return out.state
        states = values(in_threads(N, invocation))
        assert all(s.round_no == r + 1 for s in states)
        checkpoints = [s.params.tobytes() for s in states]
    assert checkpoints[0] == looped.tobytes()


@pytest.mark.parametrize("victim", [0, 2])
def test_a_worker_killed_mid_run_resumes_from_its_checkpoint_to_the_same_bits(victim):
    """The victim dies in round 3 (after writing its contribution); re-invoked from its last state it
    re-enters round 3 and every worker ends where an uninterrupted run ends."""
    params, x, y = problem(5)
    clean = traced("grad_avg", "reduce_scatter", params, x, y, rounds=6)[0][-1]
    url, job = memory_url(), new_job()
    cfg = ExchangeConfig(pattern="reduce_scatter", workers=N, **FAST)
    spaces = [open_store(url) for _ in range(N)]
    spaces[victim] = KillOnce(spaces[victim], lambda op, name: op == "put" and name.startswith("rounds:r3:"))

    def work(w):
        kept = {"state": RoundState(params.copy())}  # the worker's checkpoint, saved after every round
        try:
            return run_rounds("grad_avg", kept["state"], worker_grad(x, y, w), Exchange(spaces[w], job, w, cfg),
                              lr=LR, rounds=6, on_round=lambda outcome: kept.update(state=outcome.state))[0]
        except Killed:
            assert kept["state"].round_no == 3
            return run_rounds("grad_avg", kept["state"], worker_grad(x, y, w), Exchange(spaces[w], job, w, cfg),
                              lr=LR, rounds=3)[0]

    finals = values(in_threads(N, work))
    assert spaces[victim].fired
    assert all(f.round_no == 6 and f.params.tobytes() == clean.tobytes() for f in finals)


def test_consensus_round_carries_an_admm_shaped_round():
    """The hook's shape on a toy consensus problem (min sum_i 0.5 |x - a_i|^2, math written here):
    params = [z | u_i], x_i = (a_i + rho (z - u_i)) / (1 + rho), merged mean of x_i + u_i is z, u_i += x_i - z."""
    rho, n, d = 1.0, 3, 5
    targets = np.random.default_rng(6).standard_normal((n, d)).astype(np.float32)
    ex = exchanges(memory_url(), new_job(), n, "reduce_scatter")

    def contribute(w):
        def local(params, r):
            z, u = params[:d], params[d:]
            x = (targets[w] + rho * (z - u)) / (1 + rho)
            return float(0.5 * ((x - targets[w]) ** 2).sum()), x + u
        return local

    def combine(params, x_plus_u, merged, r):
        return np.concatenate([merged, x_plus_u - merged]).astype(np.float32)

    def work(w):
        state = RoundState(np.zeros(2 * d, np.float32))
        for _ in range(30):
            state = consensus_round(state, ex[w], contribute(w), combine).state
        return state

    states = values(in_threads(n, work))
    assert all(s.params[:d].tobytes() == states[0].params[:d].tobytes() for s in states)  # one consensus z
    np.testing.assert_allclose(states[0].params[:d], targets.mean(axis=0), atol=1e-5)


def test_run_rounds_adds_up_the_stats_and_losses():
    params, x, y = problem(4)
    ex = exchanges(memory_url(), new_job(), N, "reduce")
    out = values(in_threads(N, lambda w: run_rounds("grad_avg", RoundState(params.copy()), worker_grad(x, y, w),
                                                    ex[w], lr=LR, rounds=5)))
    state, totals, losses = out[1]
    assert state.round_no == 5 and totals.rounds == 5 and len(losses) == 5
    assert totals.bytes_written == 5 * (48 + 4 * len(params)) and totals.bytes_read == totals.bytes_written
    assert losses[-1] < losses[0]


def test_bad_arguments_are_config_errors_naming_the_field():
    params, x, y = problem()
    ex = exchanges(memory_url(), new_job(), 1, "reduce")[0]
    grad = worker_grad(x, y, 0)
    for kwargs, field in [({"algorithm": "admm"}, "algorithm"), ({"lr": 0}, "lr"), ({"rounds": -1}, "rounds"),
                          ({"local_steps": 0}, "local_steps")]:
        args = {"algorithm": "grad_avg", "lr": LR, "rounds": 1, **kwargs}
        with pytest.raises(ConfigError) as e:
            run_rounds(args.pop("algorithm"), RoundState(params), grad, ex, **args)
        assert e.value.field == field
    with pytest.raises(ConfigError, match="params"):
        grad_avg_round(RoundState(params.astype(np.float64)), grad, ex, lr=LR)
