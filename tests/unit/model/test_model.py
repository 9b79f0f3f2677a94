"""The MLP: gradients against central finite differences in float64, layout, accuracy, training."""

import numpy as np
import pytest

from faasgd import model

from faasgd.errors import ConfigError, DataError
from faasgd.model import (
    GradOut,
    accuracy,
    forward,
    init_params,
    layer_sizes,
    loss_and_grads,
    param_count,
    unflatten,
)

SIZES = (5, 4, 3, 3)


def make_batch(sizes, n, seed):
    """Return float64 inputs and integer labels for a network of `sizes`."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, sizes[0])), rng.integers(0, sizes[-1], size=n)


def numeric_grads(flat, sizes, x, y, activation, dropout, seed, eps=1e-6):
    """Return central finite differences of the loss; dropout masks replayed from the same seed."""
    def loss_at(params):
        rng = np.random.default_rng(seed)
        return loss_and_grads(params, sizes, x, y, activation, dropout, rng)[0]

    grads = np.empty_like(flat)
    for i in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[i] += eps
        minus[i] -= eps
        grads[i] = (loss_at(plus) - loss_at(minus)) / (2 * eps)
    return grads


def relative_error(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(a) + np.linalg.norm(b), 1e-12)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_gradients_match_finite_differences(activation, dropout):
    flat = init_params(SIZES, np.random.default_rng(1), activation).astype(np.float64)
    flat += np.random.default_rng(2).normal(scale=0.1, size=flat.size)  # non-zero biases too
    x, y = make_batch(SIZES, 7, seed=3)
    loss, grads = loss_and_grads(flat, SIZES, x, y, activation, dropout, np.random.default_rng(4))
    assert grads.dtype == np.float64
    assert np.isfinite(loss) and loss > 0
    expected = numeric_grads(flat, SIZES, x, y, activation, dropout, seed=4)
    assert relative_error(grads, expected) < 1e-6


def test_dropout_actually_drops_and_same_seed_replays():
    flat = init_params(SIZES, np.random.default_rng(1)).astype(np.float64)
    x, y = make_batch(SIZES, 7, seed=3)
    plain = loss_and_grads(flat, SIZES, x, y)
    a = loss_and_grads(flat, SIZES, x, y, dropout=0.5, rng=np.random.default_rng(9))
    b = loss_and_grads(flat, SIZES, x, y, dropout=0.5, rng=np.random.default_rng(9))
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
    assert a[0] != plain[0]


def test_gradient_is_averaged_over_the_batch():
    flat = init_params(SIZES, np.random.default_rng(1)).astype(np.float64)
    x, y = make_batch(SIZES, 6, seed=3)
    loss, grads = loss_and_grads(flat, SIZES, x, y)
    loss2, grads2 = loss_and_grads(flat, SIZES, np.concatenate([x, x]), np.concatenate([y, y]))
    assert loss2 == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(grads2, grads, rtol=1e-10, atol=1e-14)


def test_loss_of_uniform_logits_is_log_classes():
    sizes = (4, 3)
    flat = np.zeros(param_count(sizes))
    x, y = make_batch(sizes, 5, seed=0)
    assert loss_and_grads(flat, sizes, x, y)[0] == pytest.approx(np.log(3))


def test_softmax_is_stable_for_huge_logits():
    sizes = (2, 3)
    flat = np.zeros(param_count(sizes), dtype=np.float32)
    weights, _ = unflatten(flat, sizes)[0]
    weights[0] = [1e4, -1e4, 0]
    loss, grads = loss_and_grads(flat, sizes, np.array([[1.0, 0.0]], np.float32), np.array([1]))
    assert np.isfinite(loss) and loss == pytest.approx(2e4, rel=1e-4)
    assert np.all(np.isfinite(grads))


def test_the_gradient_is_written_into_out_and_float32_stays_float32():
    sizes = layer_sizes(6, (5,), 3)
    flat = init_params(sizes, np.random.default_rng(0))
    x, y = make_batch(sizes, 4, seed=1)
    out = np.full_like(flat, np.nan)
    loss, grads = loss_and_grads(flat, sizes, x.astype(np.float32), y, out=GradOut(out))
    assert grads is out and grads.dtype == np.float32 and np.all(np.isfinite(out))
    _, fresh = loss_and_grads(flat, sizes, x.astype(np.float32), y)
    np.testing.assert_array_equal(out, fresh)
    with pytest.raises(ConfigError) as err:
        loss_and_grads(flat, sizes, x, y, out=GradOut(np.empty(flat.size, np.float64)))
    assert err.value.field == "out"


def test_layout_sizes_and_views():
    sizes = layer_sizes(784, (100,), 10)
    assert sizes == (784, 100, 10)
    assert param_count(sizes) == 784 * 100 + 100 + 100 * 10 + 10
    flat = np.zeros(param_count(SIZES), dtype=np.float32)
    layers = unflatten(flat, SIZES)
    assert [(w.shape, b.shape) for w, b in layers] == [((5, 4), (4,)), ((4, 3), (3,)), ((3, 3), (3,))]
    layers[1][0][2, 1] = 7.0
    layers[2][1][0] = 5.0
    assert flat[5 * 4 + 4 + 2 * 3 + 1] == 7.0
    assert flat[5 * 4 + 4 + 4 * 3 + 3 + 3 * 3] == 5.0
    assert all(np.shares_memory(w, flat) and np.shares_memory(b, flat) for w, b in layers)


def test_init_params_is_seeded_glorot_or_he_with_zero_biases():
    sizes = layer_sizes(300, (200,), 10)
    flat = init_params(sizes, np.random.default_rng(5))
    assert flat.dtype == np.float32
    np.testing.assert_array_equal(flat, init_params(sizes, np.random.default_rng(5)))
    (w1, b1), (w2, b2) = unflatten(flat, sizes)
    assert not b1.any() and not b2.any()
    assert np.abs(w1).max() <= np.sqrt(6 / 500) and np.abs(w1).max() > 0.9 * np.sqrt(6 / 500)
    relu_w1 = unflatten(init_params(sizes, np.random.default_rng(5), "relu"), sizes)[0][0]
    assert relu_w1.std() == pytest.approx(np.sqrt(2 / 300), rel=0.05)


def test_accuracy_matches_explicit_oracle_in_any_chunking():
    sizes = (5, 4, 3)
    flat = init_params(sizes, np.random.default_rng(0)).astype(np.float64)
    x, y = make_batch(sizes, 50, seed=1)
    logits = forward(flat, sizes, x)
    oracle = sum(int(np.argmax(logits[i]) == y[i]) for i in range(len(y))) / len(y)
    assert accuracy(flat, sizes, x, y) == oracle
    assert accuracy(flat, sizes, x, y, batch=7) == oracle
    assert accuracy(flat, sizes, x, np.argmax(logits, axis=1), batch=3) == 1.0


def test_forward_matches_hand_written_network():
    sizes = (3, 2, 2)
    flat = np.random.default_rng(0).normal(size=param_count(sizes))
    (w1, b1), (w2, b2) = unflatten(flat, sizes)
    x = np.random.default_rng(1).normal(size=(4, 3))
    np.testing.assert_allclose(forward(flat, sizes, x, "relu"), np.maximum(x @ w1 + b1, 0) @ w2 + b2)
    np.testing.assert_allclose(forward(flat, sizes, x), np.tanh(x @ w1 + b1) @ w2 + b2)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_sgd_learns_a_separable_problem(activation):
    rng = np.random.default_rng(0)
    centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y = rng.integers(0, 3, size=600)
    x = (centres[y] + rng.normal(scale=0.4, size=(600, 2))).astype(np.float32)
    sizes = layer_sizes(2, (16,), 3)
    flat = init_params(sizes, rng, activation)
    grads = np.empty_like(flat)
    for step in range(300):
        batch = rng.integers(0, 600, size=32)
        loss_and_grads(flat, sizes, x[batch], y[batch], activation, dropout=0.1, rng=rng, out=GradOut(grads))
        flat -= 0.3 * grads
    assert accuracy(flat, sizes, x, y, activation) > 0.97


@pytest.mark.parametrize("call", [
    lambda: init_params((2, 2), np.random.default_rng(0), "sigmoid"),
    lambda: forward(np.zeros(6), (2, 2), np.zeros((1, 2)), "sigmoid"),
    lambda: loss_and_grads(np.zeros(6), (2, 2), np.zeros((1, 2)), np.zeros(1, int), "sigmoid"),
    lambda: accuracy(np.zeros(6), (2, 2), np.zeros((1, 2)), np.zeros(1, int), "sigmoid"),
])
def test_unknown_activation_raises_config_error_naming_the_field(call):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == "activation"
    assert "tanh, relu" in str(err.value) and "'sigmoid'" in str(err.value)


def test_bad_inputs_raise_typed_errors():
    sizes = (2, 2)
    flat = np.zeros(6)
    x = np.zeros((2, 2))
    with pytest.raises(ConfigError, match="rng"):
        loss_and_grads(flat, sizes, x, np.zeros(2, int), dropout=0.5)
    with pytest.raises(ConfigError, match="dropout"):
        loss_and_grads(flat, sizes, x, np.zeros(2, int), dropout=1.0, rng=np.random.default_rng(0))
    with pytest.raises(DataError, match="labels"):
        loss_and_grads(flat, sizes, x, np.array([0, 2]))
    with pytest.raises(DataError, match="inputs"):
        loss_and_grads(flat, sizes, np.zeros((2, 3)), np.zeros(2, int))
    with pytest.raises(ConfigError) as err:
        unflatten(np.zeros(5), sizes)
    assert err.value.field == "params"
    with pytest.raises(ConfigError) as err:
        layer_sizes(784, (100, 0), 10)
    assert err.value.field == "hidden_sizes"


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_a_scaled_gradient_is_the_gradient_times_the_scale(dropout):
    """A worker asks for -learning_rate x the gradient (its step): the backward pass is linear in the output error,
    so scaling that error scales every parameter's gradient, in float64 to rounding."""
    sizes, rng = (6, 5, 4, 3), np.random.default_rng(7)
    flat = model.init_params(sizes, rng).astype(np.float64)
    x, y = rng.standard_normal((9, 6)), rng.integers(0, 3, 9)
    loss, grad = model.loss_and_grads(flat, sizes, x, y, "tanh", dropout, np.random.default_rng(1))
    scaled_loss, scaled = model.loss_and_grads(flat, sizes, x, y, "tanh", dropout, np.random.default_rng(1),
                                               GradOut(np.empty_like(flat), -0.1))
    assert scaled_loss == loss  # the loss is the loss
    np.testing.assert_allclose(scaled, -0.1 * grad, rtol=1e-12, atol=1e-15)
