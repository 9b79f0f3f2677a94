"""The convolutional networks (faasgd.model.cnn): gradients against finite differences in float64, the flat
buffer <-> Keras weights round trip, the layout against what Keras builds, seeded init, the lazy import."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from faasgd import job, model
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.model import cnn_layout
from faasgd.model.cnn_layout import Layer
from faasgd.store import open_store

pytestmark = pytest.mark.usefixtures("tensorflow")  # tests/unit/model/conftest.py: imported when they run


# every kind of layer, on a 6x6 image: conv, depthwise (stride 2), pointwise, pooling, flatten, two dense
TINY = (Layer("conv", 2, 3), Layer("dwconv", kernel=3, stride=2), Layer("conv", 3, 1, padding="valid"),
        Layer("pool"), Layer("flatten"), Layer("dense", 4), Layer("dense", 3, relu=False))


def tiny_batch(rng, n=5):
    return rng.uniform(0, 1, size=(n, 36)), rng.integers(0, 3, size=n)


def test_gradients_match_central_differences_in_float64():
    net = model.CNN(TINY, (6, 6, 1))
    rng = np.random.default_rng(3)
    flat = net.init_params(rng, np.float64)
    flat += rng.normal(0, 0.05, flat.shape)  # non-zero biases: no unit sits at the ReLU's kink by construction
    x, y = tiny_batch(rng)
    loss, grad = net.loss_and_grads(flat, x, y)
    assert grad.dtype == np.float64 and grad.shape == flat.shape
    eps, numeric = 1e-6, np.empty_like(flat)
    for i in range(flat.size):
        saved = flat[i]
        flat[i] = saved + eps
        up = net.loss_and_grads(flat, x, y)[0]
        flat[i] = saved - eps
        down = net.loss_and_grads(flat, x, y)[0]
        flat[i] = saved
        numeric[i] = (up - down) / (2 * eps)
    assert np.isfinite(loss) and loss > 0
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    assert np.count_nonzero(grad) > flat.size // 2  # the check covers every layer, not a dead net


@pytest.mark.parametrize("arch", model.ARCHS)
def test_flat_buffer_to_keras_weights_and_back_is_exact(arch):
    net = model.CNN.of(arch, 784, 10)
    flat = net.init_params(np.random.default_rng(1))
    flat += np.random.default_rng(2).normal(0, 0.01, flat.shape).astype(np.float32)
    keras_net = net.keras_model(flat)
    assert [tuple(v.shape) for v in keras_net.trainable_variables] == [tuple(s) for s in net.shapes]
    back = net.flat_from_keras(keras_net)
    assert back.dtype == np.float32 and back.tobytes() == flat.tobytes()
    # the Keras model with those weights computes the logits the flat buffer gives (the same layout)
    x = np.random.default_rng(4).uniform(0, 1, (7, 784)).astype(np.float32)
    np.testing.assert_allclose(keras_net(net.images(x, np.float32)).numpy(), net.logits(flat, x), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("arch", model.ARCHS)
def test_init_is_seeded_and_every_job_of_a_seed_starts_from_the_same_weights(arch):
    def created(seed, name):
        config = load_config({}, {"model": "cnn", "cnn_arch": arch, "dataset": "synthetic", "train_samples": 200,
                                  "seed": seed, "store_url": f"memory://cnn-init-{arch}-{name}"})
        store = open_store(config.store_url)
        return store.get_weights(job.create_job(store, config))[0]

    first, again, other = created(5, "a"), created(5, "b"), created(6, "c")
    assert first.dtype == np.float32 and first.size == model.CNN.of(arch, 784, 10).param_count
    assert first.tobytes() == again.tobytes()
    assert not np.array_equal(first, other)


def test_parameter_counts_of_the_architectures():
    assert model.CNN.of("lenet", 784, 10).param_count == 416 + 12832 + 102528 + 1290
    assert model.CNN.of("mobilenet", 784, 47).param_count == 8746 - 650 + 64 * 47 + 47


@pytest.mark.parametrize("values, field", [
    ({"model": "cnn", "dataset": "higgs-like"}, "dataset"),
    ({"model": "cnn", "cnn_arch": "resnet"}, "cnn_arch"),
    ({"model": "cnn", "dropout": 0.2}, "dropout"),
    ({"model": "cnn", "algorithm": "admm"}, "model"),
])
def test_bad_cnn_configs_name_the_field(values, field):
    with pytest.raises(ConfigError) as caught:
        load_config({}, values)
    assert caught.value.field == field


def test_an_image_too_small_for_the_architecture_names_cnn_arch():
    with pytest.raises(ConfigError) as caught:
        cnn_layout.variable_shapes(cnn_layout.architecture("lenet", 10), (8, 8, 1))
    assert caught.value.field == "cnn_arch"


def test_tensorflow_is_imported_only_when_a_cnn_computes():
    """In a fresh interpreter where `import tensorflow` fails: the core creates and trains the MLP, creates a cnn
    job (layout and init are numpy), and a cnn gradient says what is missing, naming `model`."""
    code = textwrap.dedent("""
        import sys
        sys.modules["tensorflow"] = None  # import tensorflow raises ImportError
        import numpy as np
        from faasgd import job
        from faasgd.config import load_config
        from faasgd.errors import ConfigError
        from faasgd.functions.workloads import run_worker
        from faasgd.worker.invocation import Call
        from faasgd.store import open_store
        for name, model in (("mlp", "mlp"), ("cnn", "cnn")):
            config = load_config({}, {"model": model, "dataset": "synthetic", "train_samples": 300,
                                      "test_samples": 50, "max_epochs": 1, "number_of_workers": 1,
                                      "store_url": "memory://" + name, "profile_hz": 0})
            store = open_store(config.store_url)
            job_id = job.create_job(store, config)
            if model == "mlp":
                assert run_worker(Call(config, store, job_id, 0))["state"] == "finished"
                assert store.get_record(job_id, "result")["state"] == "done"
            else:
                net = job.network(config)
                try:
                    net.loss_and_grads(store.get_weights(job_id)[0], np.zeros((1, 784), np.float32), np.zeros(1, int))
                except ConfigError as error:
                    assert error.field == "model" and "faasgd[tf]" in str(error)
                else:
                    raise SystemExit("no error without tensorflow")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")


def test_admission_counts_tensorflow_in_a_cnn_workers_memory():
    from faasgd.errors import TooLarge
    from faasgd.functions.admission import TENSORFLOW_BYTES, check_job

    mlp = check_job(load_config({}, {"dataset": "synthetic", "train_samples": 2000}), {}, "redis")
    cnn = check_job(load_config({}, {"dataset": "synthetic", "train_samples": 2000, "model": "cnn"}), {}, "redis")
    assert cnn["params"] == model.CNN.of("lenet", 784, 10).param_count
    assert cnn["worker_bytes"] - mlp["worker_bytes"] >= TENSORFLOW_BYTES
    with pytest.raises(TooLarge) as caught:  # a function too small for TensorFlow: 413 naming model
        check_job(load_config({}, {"dataset": "synthetic", "train_samples": 2000, "model": "cnn"}),
                  {"memory_limit": "512Mi"}, "redis")
    assert caught.value.field == "model"
