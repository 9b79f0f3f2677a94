"""ADMM and KMeans as rounds through an Exchange (memory stores, one thread per worker) against their oracles:
faasgd.lambdaml.convex.admm.run_admm in process, scikit-learn's LogisticRegression optimum and its Lloyd KMeans."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression

from support.rounds_drive import FAST, Killed, KillOnce, exchanges, in_threads, memory_url, new_job, values
from faasgd.lambdaml.convex import admm, kmeans, lr, svm
from faasgd.data.generated import blobs, higgs_like
from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds import (Exchange, ExchangeConfig, RoundState, admm_parts, admm_round, admm_state, admm_z,
                           kmeans_round)
from faasgd.lambdaml.rounds.wire import HEADER_BYTES
from faasgd.store import open_store

L2, RHO, LOCAL_STEPS, STEP = 1e-2, 0.1, 10, 0.5
CUTS = [0, 700, 1900, 3000]  # three workers, unequal shards: the weights N n_i / n matter


@pytest.fixture(scope="module")
def task():
    X, y = higgs_like(3000, seed=21)
    shards = [(X[a:b], y[a:b]) for a, b in zip(CUTS, CUTS[1:])]
    weights = [3 * (b - a) / 3000 for a, b in zip(CUTS, CUTS[1:])]
    return X, y, shards, weights


@pytest.fixture(scope="module")
def points():
    X, _ = blobs(3000, seed=7, k=6, d=5)
    shards = [(X[rows], None) for rows in np.array_split(np.arange(3000), 3)]
    return X, shards, kmeans.init(X, 6, np.random.default_rng(1))


def run_admm_rounds(task, pattern, rounds, model=lr, l2=L2, url=None, job=None, trace=False):
    X, y, shards, weights = task
    ex = exchanges(url or memory_url(), job or new_job(), 3, pattern)

    def work(w):
        state, outcomes = admm_state(X.shape[1]), []
        for _ in range(rounds):
            outcome = admm_round(state, shards[w], model, ex[w], admm.AdmmSettings(RHO, LOCAL_STEPS, STEP, l2),
                                 weight=weights[w])
            state = outcome.state
            outcomes.append(outcome)
        return outcomes if trace else state
    return values(in_threads(3, work))


def run_kmeans_rounds(points, pattern, rounds, url=None, job=None):
    X, shards, init = points
    ex = exchanges(url or memory_url(), job or new_job(), 3, pattern, op="sum")

    def work(w):
        state, outcomes = RoundState(init.copy()), []
        for _ in range(rounds):
            outcome = kmeans_round(state, shards[w], ex[w])
            state = outcome.state
            outcomes.append(outcome)
        return outcomes
    return values(in_threads(3, work))


def objective(flat, X, y):
    return lr.loss_and_grad(flat.astype(np.float64), X.astype(np.float64), y, L2)[0]


@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_admm_through_the_exchange_equals_run_admm_in_process(task, pattern):
    rounds = 8
    states = run_admm_rounds(task, pattern, rounds)
    assert all(s.round_no == rounds for s in states)
    assert all(admm_z(s).tobytes() == admm_z(states[0]).tobytes() for s in states)  # one consensus z
    want = admm.run_admm(task[2], lr, rho=RHO, rounds=rounds, local_steps=LOCAL_STEPS, lr=STEP, l2=L2)
    np.testing.assert_allclose(admm_z(states[0]), want, rtol=1e-5, atol=1e-6)
    assert np.abs(want).max() > 0.1  # the run moved: the comparison means something
    # without l2 there is no shrink after the merge: the exchange's mean is merge_z's, to the bit
    plain = run_admm_rounds(task, pattern, 3, l2=0.0)[0]
    assert admm_z(plain).tobytes() == admm.run_admm(task[2], lr, RHO, 3, LOCAL_STEPS, STEP).tobytes()


def test_admm_rounds_reach_the_single_process_optimum_within_one_percent(task):
    X, y, _, _ = task
    fit = LogisticRegression(C=1 / (L2 * len(y)), tol=1e-10, max_iter=1000).fit(X.astype(np.float64), y)
    best = objective(np.concatenate([fit.coef_.ravel(), fit.intercept_]), X, y)
    outcomes = run_admm_rounds(task, "reduce_scatter", 15, trace=True)
    z = admm_z(outcomes[0][-1].state)
    assert objective(admm_z(outcomes[0][0].state), X, y) > 1.01 * best  # one round is not enough
    assert objective(z, X, y) <= 1.01 * best
    # the reported loss is the global objective at the round's starting z, the same on every worker
    assert all(o[5].loss == outcomes[0][5].loss for o in outcomes)
    assert outcomes[0][5].loss == pytest.approx(objective(admm_z(outcomes[0][4].state), X, y), rel=1e-5)
    assert outcomes[0][0].loss == pytest.approx(np.log(2), rel=1e-6)  # z = 0 predicts 1/2 everywhere


def test_admm_on_svm_runs_through_the_exchange_like_run_admm(task):
    state = run_admm_rounds(task, "reduce", 4, model=svm)[0]
    want = admm.run_admm(task[2], svm, rho=RHO, rounds=4, local_steps=LOCAL_STEPS, lr=STEP, l2=L2)
    np.testing.assert_allclose(admm_z(state), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("iterations", [1, 3, 8])
def test_kmeans_rounds_over_three_shards_match_sklearn_lloyd(points, iterations):
    X, _, init = points
    # one more round than the iterations: its loss is the inertia after them, summed over the exchange
    outcomes = run_kmeans_rounds(points, "reduce_scatter", iterations + 1)
    centroids = outcomes[0][iterations - 1].state.params
    assert all(o[iterations - 1].state.params.tobytes() == centroids.tobytes() for o in outcomes)
    oracle = KMeans(6, init=init.reshape(6, 5).astype(np.float64), n_init=1, max_iter=iterations,
                    algorithm="lloyd", tol=0).fit(X.astype(np.float64))
    assert kmeans.inertia(centroids, X) == pytest.approx(oracle.inertia_, rel=1e-6)
    assert outcomes[0][iterations].loss == pytest.approx(oracle.inertia_, rel=1e-6)
    np.testing.assert_allclose(centroids.reshape(6, 5), oracle.cluster_centers_, rtol=1e-6, atol=2e-6)
    assert outcomes[0][0].loss == pytest.approx(kmeans.inertia(init, X), rel=1e-6)


def test_a_centroid_no_row_chose_stays_where_it_was():
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]], dtype=np.float32)
    init = np.array([0, 0.5, 10, 10.5, 100, -100], dtype=np.float32)
    outcomes = run_kmeans_rounds((X, [(X[:2], None), (X[2:3], None), (X[3:], None)], init), "reduce", 2)
    np.testing.assert_array_equal(outcomes[2][-1].state.params, init)


def test_reduce_and_reduce_scatter_give_the_same_bits(task, points):
    a, b = (run_admm_rounds(task, pattern, 4) for pattern in ("reduce", "reduce_scatter"))
    assert a[0].params.tobytes() == b[0].params.tobytes()
    k1, k2 = (run_kmeans_rounds(points, pattern, 4) for pattern in ("reduce", "reduce_scatter"))
    assert k1[0][-1].state.params.tobytes() == k2[0][-1].state.params.tobytes()
    assert [o.loss for o in k1[0]] == [o.loss for o in k2[0]]


@pytest.mark.parametrize("algorithm", ["admm", "kmeans"])
@pytest.mark.parametrize("victim", [0, 2])
def test_a_worker_killed_mid_round_re_enters_it_to_the_same_bits(task, points, algorithm, victim):
    """The victim dies in round 2 after writing an object; re-invoked from its checkpoint (the state's bytes
    and round number, as a worker record holds them) it re-enters round 2 and every worker ends like a clean run."""
    rounds = 4
    if algorithm == "admm":
        clean = [s.params for s in run_admm_rounds(task, "reduce_scatter", rounds)]  # u_i, x_i are each worker's
        start, shards = admm_state(28), task[2]
        step = lambda s, w, e: admm_round(s, shards[w], lr, e, admm.AdmmSettings(RHO, LOCAL_STEPS, STEP, L2),
                                          weight=task[3][w])
    else:
        clean = [o[-1].state.params for o in run_kmeans_rounds(points, "reduce_scatter", rounds)]
        start, shards = RoundState(points[2].copy()), points[1]
        step = lambda s, w, e: kmeans_round(s, shards[w], e)
    url, job = memory_url(), new_job()
    cfg = ExchangeConfig(pattern="reduce_scatter", workers=3, op="mean" if algorithm == "admm" else "sum", **FAST)
    spaces = [open_store(url) for _ in range(3)]
    spaces[victim] = KillOnce(spaces[victim], lambda op, name: op == "put" and name.startswith("rounds:r2:"))

    def work(w):
        record = (start.params.tobytes(), 0)
        ex = Exchange(spaces[w], job, w, cfg)
        while record[1] < rounds:
            state = RoundState(np.frombuffer(record[0], dtype=np.float32).copy(), record[1])
            try:
                out = step(state, w, ex)
            except Killed:
                assert record[1] == 2
                ex = Exchange(spaces[w], job, w, cfg)  # a new invocation
                continue
            record = (out.state.params.tobytes(), out.state.round_no)
        return record[0]

    finals = values(in_threads(3, work))
    assert spaces[victim].fired
    assert all(f == c.tobytes() for f, c in zip(finals, clean))


def test_the_rounds_count_what_they_move(task, points):
    outcomes = run_admm_rounds(task, "reduce", 3, trace=True)
    length = 29 + 1  # the contribution x + u, and the weighted objective
    assert outcomes[1][2].stats.bytes_written == HEADER_BYTES + 4 * length
    assert outcomes[0][2].stats.bytes_read == 2 * (HEADER_BYTES + 4 * length)
    assert all(o[0].stats.rounds == 1 and o[0].stats.wait_s >= 0 for o in outcomes)
    k = run_kmeans_rounds(points, "reduce", 2)
    assert k[1][1].stats.bytes_written == HEADER_BYTES + 4 * (6 * 5 + 6 + 1)  # sums, counts, inertia


def test_bad_arguments_are_config_errors_naming_the_field(task, points):
    X, y, shards, _ = task
    mean_ex = exchanges(memory_url(), new_job(), 1, "reduce")[0]
    sum_ex = exchanges(memory_url(), new_job(), 1, "reduce", op="sum")[0]
    good = dict(rho=RHO, local_steps=1, lr=STEP, l2=L2)
    for call, field in [
        (lambda: admm_round(admm_state(28), shards[0], lr, sum_ex, admm.AdmmSettings(**good)), "op"),
        (lambda: admm_round(admm_state(28), shards[0], lr, mean_ex, admm.AdmmSettings(**{**good, "rho": 0})), "rho"),
        (lambda: admm_round(admm_state(28), shards[0], lr, mean_ex, admm.AdmmSettings(**{**good, "l2": -1})), "l2"),
        (lambda: admm_round(admm_state(28), shards[0], lr, mean_ex, admm.AdmmSettings(**good), weight=0), "weight"),
        (lambda: admm_parts(RoundState(np.zeros(4, np.float32))), "params"),
        (lambda: kmeans_round(RoundState(points[2]), points[1][0], mean_ex), "op"),
        (lambda: kmeans_round(RoundState(points[2][:7]), points[1][0], sum_ex), "centroids"),
        (lambda: kmeans_round(RoundState(points[2].astype(np.float64)), points[1][0], sum_ex), "params"),
    ]:
        with pytest.raises(ConfigError) as e:
            call()
        assert e.value.field == field
