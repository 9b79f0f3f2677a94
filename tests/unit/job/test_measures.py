"""Honest measures on in-process stores: the held-out validation rows, the model kept at the crossing, the
result's accuracies being that model's, the npz file's round trip and its refusals."""

import io
import json
import threading

import numpy as np
import pytest

from faasgd import data, job, model
from faasgd.batch import runs
from faasgd.job import ending, model_file
from faasgd.cli.main import main
from faasgd.config import load_config
from faasgd.errors import ConfigError, NoModel
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store


def small_config(name, **overrides):
    values = {"dataset": "synthetic", "train_samples": 1200, "test_samples": 400, "hidden_sizes": [16],
              "batch_size": 40, "learning_rate": 0.1, "update_rule": "average", "number_of_workers": 2, "n_fetch": 2, "n_push": 2,
              "max_epochs": 6, "target_accuracy": 0.8, "store_url": f"memory://{name}", "store_timeout_s": 2.0}
    values.update(overrides)
    return load_config({}, values)


def run_job(config):
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, store, job_id, i),))
               for i in range(config.number_of_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return store, job_id, job.read_status(store, job_id)


# -- the held-out split ---------------------------------------------------------------------------
@pytest.mark.parametrize("workers", [1, 2, 3, 7])
@pytest.mark.parametrize("limit, validation", [(1200, 0), (1000, 333), (0, 0)])
def test_the_validation_rows_are_disjoint_from_every_shard(workers, limit, validation):
    config = load_config({}, {"dataset": "synthetic", "train_samples": limit, "validation_samples": validation,
                              "number_of_workers": workers})
    train_rows, held = job.holdout(config)
    rows = limit or 60000
    assert held == (validation or min(5000, rows // 10)) and train_rows + held == rows
    val = data.load_shard("synthetic", "validation", 0, 1, limit, holdout=held, scaled=False)
    assert (val.start, val.stop) == (train_rows, rows)
    shards = [data.load_shard("synthetic", "train", i, workers, limit, holdout=held, scaled=False)
              for i in range(workers)]
    covered = np.concatenate([np.arange(s.start, s.stop) for s in shards])
    assert np.array_equal(covered, np.arange(train_rows))  # every training row once, no validation row
    assert not set(map(bytes, val.x[:200])) & {bytes(r) for s in shards for r in s.x}  # by content too


@pytest.mark.parametrize("values, words", [
    ({"train_samples": 100, "validation_samples": 99, "number_of_workers": 2}, "leaves 1 to train 2"),
    ({"train_samples": 100, "validation_samples": 100}, "leaves 0"),
    ({"train_samples": 5, "number_of_workers": 5}, "holding out 1 of the 5"),
])
def test_too_few_training_rows_left_is_refused_before_anything_is_written(values, words):
    config = load_config({}, {"dataset": "synthetic", "store_url": "memory://refused", **values})
    store = open_store(config.store_url)
    with pytest.raises(ConfigError) as error:
        job.create_job(store, config, job_id="jrefused")
    assert error.value.field == "validation_samples" and words in str(error.value)
    assert not store.client._values


# -- the model kept at the crossing ----------------------------------------------------------------
def test_the_first_crossing_keeps_its_parameters_and_later_ones_change_nothing():
    config = small_config("crossing")
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    with pytest.raises(NoModel, match="still training"):
        model_file.read_model(store, job_id)
    first = np.full(model.param_count(job.network_sizes(config)), 0.5, np.float32)
    crossing = {"validation_accuracy": 0.81, "at": store.server_time(), "samples": 900, "epochs": 0.83, "version": 4}
    assert model_file.keep_crossing(store, job_id, 1, first, lambda: 0.79, crossing)
    assert not model_file.keep_crossing(store, job_id, 0, first + 1, lambda: 0.9, {**crossing, "version": 5})
    store.push_update(job_id, np.ones_like(first))  # later pushes move the global parameters, not the model
    kept = model_file.read_model(store, job_id)
    np.testing.assert_array_equal(kept.params, first)
    assert (kept.source, kept.version, kept.validation_accuracy, kept.test_accuracy) == ("crossing", 4, 0.81, 0.79)


def test_the_results_accuracies_are_those_of_the_kept_model_and_its_file():
    config = small_config("reached")
    store, job_id, status = run_job(config)
    final = status["result"]
    assert final["state"] == "done" and final["reached_target"], final
    assert final["final_validation_accuracy"] >= config.target_accuracy
    assert 0 < final["samples_to_target"] <= final["samples"] and 0 < final["epochs_to_target"] <= final["epochs"]
    assert 0 <= final["time_to_target_s"] <= final["wall_s"]
    kept = model_file.from_npz(model_file.to_npz(model_file.read_model(store, job_id)))
    _, held = job.holdout(config)
    validation = data.load_shard("synthetic", "validation", 0, 1, config.train_samples, holdout=held, scaled=False)
    sizes = job.network_sizes(config)
    assert model_file.accuracy_on(validation, kept.params, sizes, "tanh") == final["final_validation_accuracy"]
    assert model_file.evaluate_file(kept)["test_accuracy"] == final["final_test_accuracy"] == kept.test_accuracy
    assert kept.version == final["model_version"] <= store.get_weights(job_id)[1]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_each_round_of_epoch_ends_reports_both_curves_once_on_the_same_parameters(workers):
    config = small_config(f"curve-{workers}", number_of_workers=workers, target_accuracy=1.0, max_epochs=4)
    store, job_id, status = run_job(config)
    epochs = [e for e in store.events(job_id) if e["event"] == "epoch"]
    assert len(epochs) == workers * config.max_epochs
    # the e-th epoch ends of the W workers are at about one point of the job: worker (e - 1) mod W evaluates the
    # validation and the test rows there, every worker at its last epoch (the curves' final points); the other
    # workers' events carry null for both, so the evaluation work of a job epoch does not grow with W
    expected = sorted([(e, (e - 1) % workers) for e in range(1, config.max_epochs)]
                      + [(config.max_epochs, w) for w in range(workers)])
    for measure in ("accuracy", "test_accuracy"):
        assert sorted((e["epoch"], e["worker_id"]) for e in epochs if e[measure] is not None) == expected
        assert all(0 <= e[measure] <= 1 for e in epochs if e[measure] is not None)
        # the validation curve adds the stop rule's checks between epoch ends (the accuracies the target is read
        # from); the test curve has a check's only at a crossing (none: target 1.0)
        checks = [e for e in store.events(job_id) if e["event"] == "check"] if measure == "accuracy" else []
        assert len(runs.curve({**status, "events": store.events(job_id)}, measure)) == len(expected) + len(checks)
    # each worker's record keeps the accuracy of the last epoch end it evaluated (its last), and says which
    assert [(w["accuracy_epoch"], w["accuracy"] is not None) for w in status["workers"]] == [(4, True)] * workers


def test_the_crossing_reports_the_test_accuracy_of_the_parameters_it_validated():
    config = small_config("curve")
    store, job_id, status = run_job(config)
    epochs = [e for e in store.events(job_id) if e["event"] == "epoch" and e["test_accuracy"] is not None]
    done = status["done"]  # the crossing (an epoch's end, or a check between them): its event's test accuracy is the kept model's
    evaluated = epochs + [e for e in store.events(job_id) if e["event"] == "check" and "test_accuracy" in e]
    # the crossing's event: its worker's, at its validation accuracy, and (an epoch's end and a check of one worker may
    # validate different parameters at the same accuracy) the one stamped nearest the crossing
    crossing = sorted((e for e in evaluated if e["worker_id"] == done["worker_id"]
                       and e["accuracy"] == done["validation_accuracy"]), key=lambda e: abs(e["at"] - done["at"]))
    assert crossing and crossing[0]["test_accuracy"] == done["test_accuracy"] == status["result"]["final_test_accuracy"]


def test_a_job_below_its_target_keeps_its_final_parameters_as_the_model():
    config = small_config("below", target_accuracy=1.0, max_epochs=2)
    store, job_id, status = run_job(config)
    final = status["result"]
    assert final["state"] == "done" and not final["reached_target"]
    assert final["time_to_target_s"] is final["samples_to_target"] is final["epochs_to_target"] is None
    kept = model_file.read_model(store, job_id)
    weights, version = store.get_weights(job_id)
    np.testing.assert_array_equal(kept.params, weights)
    assert kept.source == "final" and kept.version == version == final["model_version"]
    assert model_file.evaluate_file(kept)["test_accuracy"] == final["final_test_accuracy"]


def test_a_job_that_failed_before_any_model_says_so():
    config = small_config("failed")
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    ending.write_result(store, job_id, error="fan-out stopped")
    with pytest.raises(NoModel, match="ended \\(failed\\) without a model: fan-out stopped"):
        model_file.read_model(store, job_id)


# -- the file ----------------------------------------------------------------------------------------
def a_model_file(**changes) -> dict:
    sizes = (784, 4, 10)
    arrays = {"format": np.int64(1), "params": np.zeros(model.param_count(sizes), np.float32),
              "sizes": np.array(sizes, np.int64), "activation": np.array("tanh"), "dataset": np.array("synthetic"),
              "job_id": np.array("j1"), "source": np.array("crossing"), "version": np.int64(3),
              "validation_accuracy": np.float64(0.8), "test_accuracy": np.float64(0.7), "test_samples": np.int64(50)}
    arrays.update(changes)
    return {k: v for k, v in arrays.items() if v is not None}


def npz(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_a_model_file_round_trips_without_pickle():
    found = model_file.from_npz(npz(a_model_file()))
    again = model_file.from_npz(model_file.to_npz(found))
    np.testing.assert_array_equal(again.params, found.params)
    assert {**vars(again), "params": None} == {**vars(found), "params": None}
    assert (again.sizes, again.job_id, again.test_accuracy, again.version) == ((784, 4, 10), "j1", 0.7, 3)
    with np.load(io.BytesIO(model_file.to_npz(found)), allow_pickle=False) as arrays:
        assert set(arrays.files) == set(model_file.FIELDS) and arrays["activation"].dtype.kind == "U"


@pytest.mark.parametrize("raw, words", [
    (b"not a zip at all", "not a faasgd model file"),
    (b"", "not a faasgd model file"),
    (npz(a_model_file(job_id=np.array([{"x": 1}], dtype=object))), "not a faasgd model file"),  # pickled object
    (npz(a_model_file(params=None)), "params missing"),
    (npz(a_model_file(params=np.zeros(5, np.float32))), "do not fit layer sizes"),
    (npz(a_model_file(params=np.zeros(model.param_count((784, 4, 10)), np.float64))), "float32"),
    (npz(a_model_file(activation=np.array("sigmoid"))), "unknown activation"),
    (npz(a_model_file(format=np.int64(2))), "format 2"),
    (npz(a_model_file(test_accuracy=np.array("high"))), "test_accuracy must be a float"),
])
def test_a_bad_model_file_is_refused_naming_the_model(raw, words):
    with pytest.raises(ConfigError) as error:
        model_file.from_npz(raw)
    assert error.value.field == "model" and words in str(error.value)


def test_the_cli_saves_and_evaluates_a_model_and_refuses_bad_input(tmp_path, capsys, monkeypatch):
    config = small_config("cli-model", store_url="memory://cli-model")
    store, job_id, status = run_job(config)
    monkeypatch.setenv("store_url", config.store_url)
    out = tmp_path / "model.npz"
    assert main(["model", job_id, "-o", str(out), "--direct"]) == 0
    assert main(["evaluate", str(out), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert answer["test_accuracy"] == answer["reported_test_accuracy"] == status["result"]["final_test_accuracy"]
    assert main(["model", job_id, "-o", str(tmp_path / "no" / "such" / "m.npz"), "--direct"]) == 2
    assert main(["model", "jnosuchjob", "-o", str(out), "--direct"]) == 1
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04garbage")
    assert main(["evaluate", str(tmp_path / "garbage.npz")]) == 2
    assert main(["evaluate", str(tmp_path / "absent.npz")]) == 2
    assert main(["evaluate", str(out), "--dataset", "emnist-letters"]) == 2  # 27 classes, not 10
    err = capsys.readouterr().err
    assert "output: must be a file path" in err and "no job 'jnosuchjob'" in err and "model: not a faasgd" in err
