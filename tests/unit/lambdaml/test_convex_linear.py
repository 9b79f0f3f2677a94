"""Logistic regression and the linear SVM: gradients against finite differences, dense equals CSR,
training reaches scikit-learn's accuracy, bad inputs name their field."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from faasgd.lambdaml.convex import MODELS, get_model, lr, svm
from faasgd.data.generated import higgs_like, rcv1_like, train_test_split
from faasgd.errors import ConfigError


def small_task(n_classes, n=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.5] = 0.0  # half zeros, so the CSR form has something to skip
    y = rng.integers(0, n_classes, size=n)
    k = 1 if n_classes == 2 else n_classes
    flat = rng.normal(scale=0.5, size=(d + 1) * k)
    return flat, X, y


def finite_differences(f, flat, eps=1e-6):
    grad = np.zeros_like(flat)
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = eps
        grad[i] = (f(flat + step) - f(flat - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("model,n_classes", [(lr, 2), (lr, 4), (svm, 2)])
@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_gradient_matches_central_finite_differences_in_float64(model, n_classes, l2):
    flat, X, y = small_task(n_classes)
    loss, grad = model.loss_and_grad(flat, X, y, l2)
    assert grad.dtype == np.float64 and grad.shape == flat.shape and loss > 0
    numeric = finite_differences(lambda f: model.loss_and_grad(f, X, y, l2)[0], flat)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("model,n_classes", [(lr, 2), (lr, 3), (svm, 2)])
def test_dense_and_csr_inputs_give_the_same_loss_and_gradient(model, n_classes):
    flat, X, y = small_task(n_classes, n=200, d=30, seed=1)
    dense_loss, dense_grad = model.loss_and_grad(flat, X, y, 0.1)
    sparse_loss, sparse_grad = model.loss_and_grad(flat, sp.csr_matrix(X), y, 0.1)
    assert sparse_loss == pytest.approx(dense_loss, rel=1e-6, abs=1e-12)
    np.testing.assert_allclose(sparse_grad, dense_grad, rtol=1e-6, atol=1e-12)
    np.testing.assert_array_equal(model.predict(flat, X), model.predict(flat, sp.csr_matrix(X)))


def test_float32_parameters_give_a_float32_gradient_and_csr_stays_sparse(monkeypatch):
    X, y = rcv1_like(300, seed=3, n_features=5000, density=0.01)
    flat = lr.init(5000, 2)
    monkeypatch.setattr(sp.csr_matrix, "toarray", lambda *a, **k: pytest.fail("X was densified"))
    loss, grad = lr.loss_and_grad(flat, X, y, 1e-3)
    assert flat.dtype == grad.dtype == np.float32 and flat.size == 5001
    assert loss == pytest.approx(np.log(2), rel=1e-6)  # zero weights: p = 1/2 for every row


def gradient_descent(model, flat, X, y, l2, lr_, steps):
    for _ in range(steps):
        flat -= lr_ * model.loss_and_grad(flat, X, y, l2)[1]
    return flat


def test_lr_by_plain_gradient_descent_reaches_sklearn_accuracy_within_a_point():
    X, y = higgs_like(6000, seed=11)
    X_train, X_test, y_train, y_test = train_test_split(X, y, 0.25, seed=0)
    l2 = 1e-3
    flat = gradient_descent(lr, lr.init(28, 2), X_train, y_train, l2, 1.0, 200)
    reference = LogisticRegression(C=1 / (l2 * len(y_train))).fit(X_train, y_train).score(X_test, y_test)
    assert reference > 0.62  # the task is learnable, not a coin
    assert lr.accuracy(flat, X_test, y_test) >= reference - 0.01


def test_multinomial_lr_learns_separated_classes():
    rng = np.random.default_rng(4)
    centres = rng.normal(scale=3, size=(3, 5))
    y = rng.integers(0, 3, size=600)
    X = (centres[y] + rng.normal(size=(600, 5))).astype(np.float32)
    flat = gradient_descent(lr, lr.init(5, 3), X, y, 0.0, 0.5, 100)
    assert flat.size == 18 and lr.accuracy(flat, X, y) > 0.9
    probs = lr.predict_proba(flat, X)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)


def test_svm_by_gradient_descent_separates_a_linear_task():
    X, y = higgs_like(3000, seed=5)
    flat = gradient_descent(svm, svm.init(28), X, y, 1e-3, 0.1, 150)
    first = svm.loss_and_grad(svm.init(28), X, y, 1e-3)[0]
    assert first == pytest.approx(1.0)  # zero weights: every margin is 1
    assert svm.loss_and_grad(flat, X, y, 1e-3)[0] < 0.8 * first and svm.accuracy(flat, X, y) > 0.62


def test_the_registry_names_the_models_and_refuses_others():
    assert get_model("lr") is lr and get_model("svm") is svm and set(MODELS) == {"lr", "svm", "kmeans"}
    with pytest.raises(ConfigError, match="model: unknown model 'mlpx'.*kmeans, lr, svm") as e:
        get_model("mlpx")
    assert e.value.field == "model"


@pytest.mark.parametrize("call,field", [
    (lambda: lr.loss_and_grad(np.zeros(7), np.zeros((3, 6)), [0, 1, 2]), "y"),  # binary: labels 0/1
    (lambda: lr.loss_and_grad(np.zeros(7), np.zeros((3, 6)), [0, 1]), "y"),  # one label a row
    (lambda: lr.loss_and_grad(np.zeros(7), np.zeros((3, 6)), [0.5, 1, 0]), "y"),
    (lambda: lr.loss_and_grad(np.zeros(8), np.zeros((3, 6)), [0, 1, 0]), "params"),  # not (d + 1) * k
    (lambda: lr.loss_and_grad(np.zeros(7), np.zeros(6), [0]), "X"),
    (lambda: lr.loss_and_grad(np.zeros(7), [[0] * 6], [0]), "X"),  # a list is not an array
    (lambda: lr.loss_and_grad(np.zeros(7), np.zeros((1, 6)), [0], l2=-1), "l2"),
    (lambda: svm.loss_and_grad(np.zeros(14), np.zeros((1, 6)), [0]), "params"),  # a multinomial layout
    (lambda: svm.init(6, 3), "n_classes"),
    (lambda: lr.init(0, 2), "n_features"),
    (lambda: lr.init(6, 1), "n_classes"),
])
def test_bad_inputs_raise_config_errors_naming_the_field(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field and str(e.value).startswith(f"{field}: ")
