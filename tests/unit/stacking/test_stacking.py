"""Stacking ensemble training: the models' array form against scikit-learn, the safe format's refusals,
the config's hostile-input rules and a whole job in-process (faasgd.stacking)."""

from __future__ import annotations

import io
import os
import pickle
import re
import uuid

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from support.stacking_drive import SMALL, in_process

from faasgd.channels.s3 import S3Space
from faasgd.errors import ConfigError, JobNotFound, TooLarge
from faasgd.stacking import flow, models, predictors, records, safe_format
from faasgd.stacking.config import load_stacking
from faasgd.stacking.dataset import accuracy, make_dataset
from faasgd.stacking.record_store import BlobStore, RecordStore
from faasgd.stacking.safe_format import UnsafeObject
from faasgd.store import ParameterStore, open_store



@pytest.fixture(scope="module")
def small():
    config = load_stacking({}, SMALL)
    return config, make_dataset(config), flow.shape_of(config)


def fitted(spec, data):
    estimator, _ = models.fit_base(spec, 3, 5, data.x_train, data.y_train)
    return estimator


@pytest.mark.parametrize("spec", models.DEFAULT_MODELS + (models.spec("RandomForestRegressor", n_estimators=5,
                                                                      max_depth=6),), ids=lambda s: s.name)
def test_a_model_in_array_form_predicts_what_scikit_learn_predicts_and_survives_the_round_trip(small, spec):
    _, data, shape = small
    estimator = fitted(spec, data)
    model = predictors.from_estimator(estimator)
    np.testing.assert_allclose(model.predict(data.x_test), estimator.predict(data.x_test), rtol=1e-5, atol=1e-5)
    back = safe_format.load_model(safe_format.dump_model(model), shape, "model:0")
    np.testing.assert_array_equal(back.predict(data.x_test), model.predict(data.x_test))


def test_the_meta_model_in_array_form_classifies_as_scikit_learn(small):
    _, data, _ = small
    features = data.x_train[:, :4].astype(np.float64)
    estimator = LogisticRegression().fit(features, data.y_train)
    model = predictors.from_estimator(estimator)
    np.testing.assert_array_equal(model.predict(data.x_test[:, :4]), estimator.predict(data.x_test[:, :4]))


def test_the_dataset_is_vswarms_seeded_set_split_stratified(small):
    config, data, shape = small
    again = make_dataset(config)
    np.testing.assert_array_equal(again.x_train, data.x_train)  # seeded
    assert data.x_train.shape == (shape.train_rows, 16) and data.x_test.shape == (shape.test_rows, 16)
    assert shape.train_rows + shape.test_rows == 120 and shape.test_rows == 36
    default = make_dataset(load_stacking({}, {}))
    assert default.x_train.shape[1] == 1024 and len(default.y_train) + len(default.y_test) == 300
    assert 0.8 < 1 - np.concatenate([default.y_train, default.y_test]).mean() < 0.95  # weights 0.9 / 0.1, flip_y 0.1


class Exploit:
    """Unpickling this would create a file: a refused object must never get that far."""

    path = ""

    def __reduce__(self):
        return (open, (self.path, "w"))


def npz(**arrays) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def linear_model(small, **change):
    _, data, _ = small
    arrays = safe_format.model_arrays(predictors.from_estimator(fitted(models.DEFAULT_MODELS[1], data)))
    arrays.update(change)
    return npz(format=np.array(safe_format.FORMAT), object=np.array("model"), **arrays)


def tampered(small, tmp_path):
    Exploit.path = str(tmp_path / "ran")
    compressed = io.BytesIO()
    np.savez_compressed(compressed, format=np.array(safe_format.FORMAT), object=np.array("model"))
    return {
        "a pickle": (pickle.dumps(Exploit()), "pickle"),
        "garbage": (os.urandom(300), "not an npz"),
        "an object array": (linear_model(small, coef=np.array([Exploit()], dtype=object)), "holds pickled objects"),
        "a wrong shape": (linear_model(small, coef=np.zeros(15)), "coef must have shape (16,)"),
        "a wrong dtype": (linear_model(small, coef=np.zeros(16, np.float32)), "coef must be <f8"),
        "a big-endian array": (linear_model(small, coef=np.zeros(16, ">f8")), "coef must be <f8"),
        "a NaN": (linear_model(small, intercept=np.array(np.nan)), "not finite"),
        "an unknown kind": (linear_model(small, kind=np.array("os.system")), "unknown model kind"),
        "an extra member": (linear_model(small, payload=np.zeros(3)), "unexpected member"),
        "the wrong object": (npz(format=np.array(safe_format.FORMAT), object=np.array("dataset")), "object must be"),
        "a compressed archive": (compressed.getvalue(), "uncompressed"),
        "a truncated archive": (linear_model(small)[:200], "unreadable npz"),
    }


@pytest.mark.parametrize("case", ["a pickle", "garbage", "an object array", "a wrong shape", "a wrong dtype",
                                  "a big-endian array", "a NaN", "an unknown kind", "an extra member",
                                  "the wrong object", "a compressed archive", "a truncated archive"])
def test_a_tampered_model_is_refused_with_a_clear_error_and_runs_nothing(small, tmp_path, case):
    raw, words = tampered(small, tmp_path)[case]
    with pytest.raises(UnsafeObject) as info:
        safe_format.load_model(raw, small[2], "model:2")
    assert words in str(info.value) and info.value.field == "model:2" and info.value.http_status == 422
    assert "never pickle" in str(info.value)
    assert not (tmp_path / "ran").exists()


def forest_arrays(small):
    _, data, _ = small
    model = predictors.from_estimator(fitted(models.spec("RandomForestRegressor", max_depth=3), data))
    return safe_format.model_arrays(model)


@pytest.mark.parametrize("change, words", [
    (lambda a: a["left"].__setitem__(0, 0), "after its parent"),  # a cycle: a walk that never ends
    (lambda a: a["feature"].__setitem__(0, 99), "feature in [0, 16)"),
    (lambda a: a["right"].__setitem__(0, -1), "two children or none"),
    (lambda a: a.__setitem__("roots", np.array([1], np.int64)), "roots"),
])
def test_a_malformed_forest_is_refused(small, change, words):
    arrays = forest_arrays(small)
    change(arrays)
    raw = npz(format=np.array(safe_format.FORMAT), object=np.array("model"), **arrays)
    with pytest.raises(UnsafeObject, match=re.escape(words)):
        safe_format.load_model(raw, small[2], "model:0")


def test_a_neighbours_model_with_k_beyond_its_rows_is_refused(small):
    _, data, shape = small
    arrays = safe_format.model_arrays(predictors.from_estimator(fitted(models.DEFAULT_MODELS[3], data)))
    arrays["k"] = np.array(10_000, np.int64)
    with pytest.raises(UnsafeObject, match="k must be in"):
        safe_format.load_model(npz(format=np.array(safe_format.FORMAT), object=np.array("model"), **arrays), shape, "m")


def test_dataset_labels_must_be_0_or_1(small):
    _, data, shape = small
    arrays = data.arrays()
    arrays["y_test"] = arrays["y_test"] * 7
    with pytest.raises(UnsafeObject, match="0 or 1"):
        safe_format.load_dataset(safe_format.dumps("dataset", arrays), shape)


@pytest.mark.parametrize("body, field, words", [
    ({"trainers": 4}, "trainers", "unknown key"),
    ({"transfer": "s3"}, "transfer", "not available"),
    ({"transfer": "ftp"}, "transfer", "one of inline, store, s3"),
    ({"models": ["os.system"]}, "models", "unknown model"),
    ({"models": [{"model": "Lasso", "params": {"selection": "random"}}]}, "models", "no parameter 'selection'"),
    ({"models": [{"model": "Lasso", "params": {"alpha": -1}}]}, "models", "alpha"),
    ({"models": []}, "models", "1 to 16"),
    ({"models": ["KNeighborsRegressor"], "n_samples": 30}, "models", "n_neighbors=20"),
    ({"trainers_num": 0}, "trainers_num", "[1, 64]"),
    ({"concurrent_training": "maybe"}, "concurrent_training", "true or false"),
    ({"store_url": "redis://evil:6379/0"}, "store_url", "never from a request"),
    ({"n_samples": 20, "cv_folds": 10, "models": ["Lasso"]}, "n_samples", "cv_folds"),
    ({"meta_c": -1}, "meta_c", "[0.0, 1000000.0]"),
    ({"meta_c": "strong"}, "meta_c", "must be a number"),
    ([1], "body", "JSON object"),
])
def test_bad_config_is_a_400_naming_the_field(body, field, words):
    with pytest.raises(ConfigError) as info:
        load_stacking({}, body)
    assert info.value.field == field and words in str(info.value) and info.value.http_status == 400


def test_environment_then_body():
    config = load_stacking({"trainers_num": "16", "concurrent_training": "false", "models": "Lasso,LinearSVR",
                            "mode": "http"}, {"trainers_num": 8})
    assert config.trainers_num == 8 and config.concurrent_training is False
    assert [m.name for m in config.models] == ["Lasso", "LinearSVR"] and config.models[0].params["alpha"] == 0.1


def test_an_inline_job_whose_bodies_would_be_too_large_is_a_413_before_anything():
    config = load_stacking({}, {"transfer": "inline", "trainers_num": 16})
    flow.check_inline(config, 16 << 20)
    with pytest.raises(TooLarge) as info:
        flow.check_inline(config, 1 << 20)
    assert info.value.http_status == 413 and info.value.field == "transfer" and "transfer=store" in str(info.value)
    flow.check_inline(load_stacking({}, {"transfer": "store", "trainers_num": 16}), 1)  # store: no such bound


def oracle(config):
    """The scores computed with scikit-learn alone (its own predict), as vSwarm's functions would."""
    data = make_dataset(config)
    train, test = [], []
    for i in range(config.trainers_num):
        estimator, out_of_fold = models.fit_base(flow.model_of(config, i), config.seed, config.cv_folds,
                                                 data.x_train, data.y_train)
        train.append(out_of_fold)
        test.append(estimator.predict(data.x_test))
    strength = np.inf if config.meta_c == 0 else config.meta_c  # meta_c 0: unpenalised
    meta = LogisticRegression(C=strength, random_state=config.seed, max_iter=1000).fit(np.column_stack(train), data.y_train)
    return [accuracy(t, data.y_test) for t in test], float(np.mean(meta.predict(np.column_stack(test)) == data.y_test))


@pytest.mark.parametrize("transfer, meta_c", [("inline", 0.0), ("store", 0.0), ("store", 1.0)])
def test_a_whole_job_in_process_scores_as_scikit_learn_alone(transfer, meta_c):
    store = open_store(f"memory://stack{uuid.uuid4().hex[:8]}")
    config = load_stacking({}, {**SMALL, "transfer": transfer, "trainers_num": 5, "concurrent_training": False,
                                "meta_c": meta_c})
    job_id = records.create_job(store, config)
    result = flow.drive(store, job_id, config, in_process(store, job_id, config))
    base, ensemble = oracle(config)
    assert result["base_scores"] == pytest.approx(base) and result["ensemble_score"] == pytest.approx(ensemble)
    assert set(result["phases"]) == set(flow.PHASES) and result["total_s"] >= sum(result["phases"].values()) - 1e-3
    assert records.read_status(store, job_id)["state"] == "done"
    assert (store.get_blob(job_id, "full-model") is not None) == (transfer == "store")
    if transfer == "store":
        full, meta = safe_format.load_models(store.get_blob(job_id, "full-model"), flow.shape_of(config), full=True)
        assert len(full) == 5 and isinstance(meta, predictors.Logistic)


class OnlyRecordStore:
    """A store offering exactly the calls RecordStore names, and nothing of the parameter store beyond them."""

    def __init__(self, store):
        for name in ("put_record", "add_record", "get_record", "get_records", "server_time", "put_blob", "get_blob"):
            setattr(self, name, getattr(store, name))


def test_a_store_job_runs_on_the_record_store_role_alone_and_every_store_plays_it():
    store = OnlyRecordStore(open_store(f"memory://stack{uuid.uuid4().hex[:8]}"))
    config = load_stacking({}, {**SMALL, "transfer": "store", "trainers_num": 2})
    job_id = records.create_job(store, config)
    result = flow.drive(store, job_id, config, in_process(store, job_id, config))
    assert result["state"] == "done" and records.read_status(store, job_id)["state"] == "done"
    assert isinstance(store, RecordStore) and issubclass(ParameterStore, RecordStore)
    assert issubclass(S3Space, BlobStore) and not issubclass(S3Space, RecordStore)  # transfer s3: objects only


def test_a_tampered_object_in_the_store_fails_the_job_and_nothing_is_fitted_on_it(small, tmp_path):
    store = open_store(f"memory://stack{uuid.uuid4().hex[:8]}")
    config = load_stacking({}, {**SMALL, "trainers_num": 2})
    job_id = records.create_job(store, config)
    call = in_process(store, job_id, config)
    Exploit.path = str(tmp_path / "ran")

    def tamper(function, body):
        answer = call(function, body)
        if function == flow.TRAINER and body["trainer_id"] == 1:
            store.put_blob(job_id, "model:1", pickle.dumps(Exploit()))  # someone on the network writes the store
        return answer

    with pytest.raises(UnsafeObject, match="model:1: refused"):
        flow.drive(store, job_id, config, tamper)
    status = records.read_status(store, job_id)
    assert status["state"] == "failed" and "model:1: refused (it is a pickle)" in status["error"]
    assert store.get_blob(job_id, "models") is None and not (tmp_path / "ran").exists()


def test_status_of_an_unknown_job_is_a_404():
    with pytest.raises(JobNotFound):
        records.read_status(open_store(f"memory://stack{uuid.uuid4().hex[:8]}"), "snothere")


def test_linear_svr_fitted_in_threads_at_once_warns_nothing(small):
    """LinearSVR at vSwarm's tol stops at its iteration limit (ConvergenceWarning, expected); trainers fit in
    threads at once in the local runtime, where warnings.catch_warnings (not thread-safe) let it through."""
    import threading
    import warnings

    _, data, _ = small
    spec = models.spec("LinearSVR", max_iter=5)  # sure not to converge
    with warnings.catch_warnings(record=True) as caught:  # entered once, around all the threads
        warnings.simplefilter("always")
        threads = [threading.Thread(target=lambda: [fitted(spec, data) for _ in range(3)]) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [w for w in caught if "ConvergenceWarning" in type(w.message).__name__] == []
