"""Consensus ADMM over shards reaches the single-process optimum; its pieces are the textbook updates."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from faasgd.lambdaml.convex import admm, lr, svm
from faasgd.data.generated import higgs_like
from faasgd.errors import ConfigError

L2 = 1e-2


@pytest.fixture(scope="module")
def task():
    X, y = higgs_like(4000, seed=21)
    cuts = [0, 500, 1500, 2600, 4000]  # four workers, unequal shards: the weights n_i / n matter
    return X, y, [(X[a:b], y[a:b]) for a, b in zip(cuts, cuts[1:])]


def objective(model, flat, X, y):
    return model.loss_and_grad(flat.astype(np.float64), X.astype(np.float64), y, L2)[0]


def test_admm_on_lr_reaches_sklearns_optimum_within_one_percent(task):
    X, y, shards = task
    # the single-process optimum: scikit-learn's LogisticRegression at the matching regularisation
    # (it minimises C * sum(loss) + ||w||^2 / 2 with an unpenalised intercept: C = 1 / (l2 * n))
    fit = LogisticRegression(C=1 / (L2 * len(y)), tol=1e-10, max_iter=1000).fit(X.astype(np.float64), y)
    optimum = np.concatenate([fit.coef_.ravel(), fit.intercept_])
    assert np.abs(lr.loss_and_grad(optimum, X.astype(np.float64), y, L2)[1]).max() < 1e-6  # same problem
    best = objective(lr, optimum, X, y)
    one_round = admm.run_admm(shards, lr, rho=0.1, rounds=1, local_steps=10, lr=0.5, l2=L2)
    z = admm.run_admm(shards, lr, rho=0.1, rounds=15, local_steps=10, lr=0.5, l2=L2)
    assert z.dtype == np.float32 and z.shape == (29,)
    assert objective(lr, one_round, X, y) > 1.01 * best  # one round is not enough: the rounds do the work
    assert objective(lr, z, X, y) <= 1.01 * best
    # tighter than asked: with the shards weighted by their rows the consensus problem IS the global one
    # (unweighted, these unequal shards stop about 0.4 % above the optimum)
    assert objective(lr, z, X, y) <= 1.001 * best


def test_admm_on_svm_reaches_a_long_full_batch_run_within_one_percent(task):
    X, y, shards = task
    w = svm.init(28).astype(np.float64)  # the reference: 3000 full-batch subgradient steps, step 0.5/sqrt(t)
    for t in range(3000):
        w -= 0.5 / np.sqrt(t + 1) * svm.loss_and_grad(w, X.astype(np.float64), y, L2)[1]
    z = admm.run_admm(shards, svm, rho=0.1, rounds=15, local_steps=10, lr=0.1, l2=L2)
    assert objective(svm, z, X, y) <= 1.01 * objective(svm, w, X, y)


def test_merge_z_is_the_mean_with_the_weights_shrunk_and_the_biases_not():
    a = np.array([1.0, 2.0, 3.0, 10.0], dtype=np.float32)  # 3 features + 1 bias
    b = np.array([3.0, 2.0, 1.0, 20.0], dtype=np.float32)
    np.testing.assert_array_equal(admm.merge_z([a, b], rho=1.0), [2, 2, 2, 15])
    z = admm.merge_z([a, b], rho=1.0, l2=1.0, n_features=3)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z, [1, 1, 1, 15])  # rho / (rho + l2) = 1/2 on the weights only


def test_a_worker_update_minimises_its_local_augmented_problem():
    X, y = higgs_like(400, seed=2)
    z = np.full(29, 0.1, dtype=np.float32)
    u = np.full(29, -0.05, dtype=np.float32)
    x, sent = admm.worker_update(lr, z.copy(), z, u, X, y, admm.AdmmSettings(rho=1.0, local_steps=300, lr=0.5))
    np.testing.assert_array_equal(sent, x + u)
    grad = lr.loss_and_grad(x, X, y)[1] + 1.0 * (x - z + u)  # stationary point of f_i + rho/2 ||x - z + u||^2
    assert np.abs(grad).max() < 1e-4
    np.testing.assert_array_equal(admm.update_dual(u, x, z), u + x - z)


@pytest.mark.parametrize("call,field", [
    (lambda: admm.merge_z([], rho=1.0), "contributions"),
    (lambda: admm.merge_z([np.zeros(4, np.float32)], rho=0.0), "rho"),
    (lambda: admm.merge_z([np.zeros(4, np.float32)], rho=1.0, l2=0.1), "n_features"),
    (lambda: admm.AdmmSettings(1.0, 0, 0.1), "local_steps"),
    (lambda: admm.AdmmSettings(1.0, 1, -1), "lr"),
    (lambda: admm.run_admm([], lr, 1.0, 1, 1, 0.1), "shards"),
    (lambda: admm.run_admm([(np.zeros((1, 2)), [0])], lr, 1.0, 0, 1, 0.1), "rounds"),
])
def test_bad_inputs_raise_config_errors_naming_the_field(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field
