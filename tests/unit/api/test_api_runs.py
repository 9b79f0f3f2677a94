"""faasgd.api's results, models and runtime as a notebook meets them: the results database's runs as rows or
a DataFrame, from the file or its folder; comparisons; bad input named; the runtime context manager stops
only a runtime it started."""

import sys

import pytest

from faasgd import api
from faasgd.api import results_store
from faasgd.api import local_runtime
from faasgd.errors import ConfigError
from faasgd.job.result import MEASURES


def run(workers: int, round_: int, samples_per_s: float, state: str = "done") -> dict:
    return {"config_id": workers, "configuration": f"number_of_workers={workers}", "round": round_,
            "job_id": f"j{workers}{round_}", "state": state, "store": "redis",
            "config": {"number_of_workers": workers, "hidden_sizes": [100]}, "varying": {"number_of_workers": workers},
            "samples_per_s": samples_per_s, "time_to_target_s": 10.0 / workers}


def batch(path, name: str, runs: list[dict]) -> int:
    db = results_store.open_db(path)
    batch_id = results_store.start_batch(db, {"name": name, "target": "local"})
    for index, record in enumerate(runs, start=1):
        results_store.record_run(db, batch_id, index, record, MEASURES)
    results_store.finish_batch(db, batch_id, {"name": name})
    db.close()
    return batch_id


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "results" / "faasgd.sqlite"
    first = batch(path, "sweep", [run(1, 1, 100.0), run(2, 1, 180.0), run(2, 2, 220.0, state="failed")])
    second = batch(path, "sweep again", [run(1, 1, 150.0), run(2, 1, 400.0)])
    return path, first, second


def test_the_runs_are_rows_or_a_frame_from_the_file_or_its_folder(database):
    path, first, second = database
    rows = api.results(path)
    assert [(r["batch_id"], r["run_index"]) for r in rows] == [(first, 1), (first, 2), (first, 3), (second, 1), (second, 2)]
    frame = api.results(path.parent, batches=[first], where={"number_of_workers": 2}, as_frame=True)
    assert list(frame["round"]) == [1, 2] and list(frame["samples_per_s"]) == [180.0, 220.0]
    assert frame.groupby("state")["samples_per_s"].mean().to_dict() == {"done": 180.0, "failed": 220.0}
    assert [b["name"] for b in api.batches(path.parent)] == ["sweep", "sweep again"]


def test_the_default_database_is_the_environments(database, monkeypatch):
    path, first, _ = database
    monkeypatch.setenv(results_store.ENV, str(path))
    assert {r["batch_id"] for r in api.results(batches=[first])} == {first}


def test_a_missing_database_is_named_and_not_created(tmp_path):
    with pytest.raises(ConfigError) as error:
        api.results(tmp_path / "none.sqlite")
    assert error.value.field == "db" and "none.sqlite" in str(error.value)
    assert not (tmp_path / "none.sqlite").exists()


def test_as_frame_without_pandas_says_what_to_install(database, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(ConfigError) as error:
        api.results(database[0], as_frame=True)
    assert error.value.field == "as_frame" and "pip install pandas" in str(error.value)
    assert len(api.results(database[0])) == 5  # the rows need nothing


def test_result_records_given_as_they_are_are_rows_and_anything_else_is_refused():
    frame = api.results([{"job_id": "j1", "samples": 10}, {"job_id": "j2", "samples": 20}], as_frame=True)
    assert frame["samples"].sum() == 30
    with pytest.raises(ConfigError) as error:
        api.results([42])
    assert error.value.field == "source"


def test_compare_puts_two_batches_side_by_side_on_finished_runs(database):
    path, first, second = database
    rows = {r["group"]: r for r in api.compare(first, second, ["samples_per_s"], db_or_dir=path)}
    assert rows["number_of_workers=2"]["samples_per_s"] == {"a": 180.0, "b": 400.0, "ratio": 400.0 / 180.0}
    assert (rows["number_of_workers=2"]["runs_a"], rows["number_of_workers=2"]["runs_b"]) == (2, 1)
    with pytest.raises(ConfigError) as error:
        api.compare(first, 99, db_or_dir=path)
    assert error.value.field == "b" and "batches()" in str(error.value)
    with pytest.raises(ConfigError) as error:
        api.compare(first, second, ["speed"], db_or_dir=path)
    assert error.value.field == "measure"


@pytest.mark.parametrize("call, field", [
    (lambda tmp: api.load_model(42), "model"),
    (lambda tmp: api.load_model(tmp / "absent.npz"), "model"),
    (lambda tmp: api.evaluate(tmp / "absent.npz", test_samples=-1), "test_samples"),
    (lambda tmp: api.save_model(None, tmp / "no" / "such" / "m.npz"), "output"),
    (lambda tmp: api.start_runtime(stack=str(tmp / "missing.yml")), "stack"),
])
def test_bad_input_is_refused_naming_the_keyword(tmp_path, call, field):
    with pytest.raises(ConfigError) as error:
        call(tmp_path)
    assert error.value.field == field


@pytest.mark.parametrize("already_running", [False, True])
def test_the_runtime_block_stops_only_a_runtime_it_started(monkeypatch, tmp_path, already_running):
    stopped = []
    state = {"gateway_url": "http://127.0.0.1:4321", "dir": str(tmp_path)}
    monkeypatch.setattr(local_runtime.control, "up", lambda *a, **k: (state, not already_running))
    monkeypatch.setattr(local_runtime.control, "down", lambda directory: stopped.append(directory) or [1])
    (tmp_path / "stack.yml").write_text("functions: {}\n")
    with api.runtime(stack=str(tmp_path / "stack.yml"), directory=str(tmp_path)) as rt:
        assert rt.gateway_url == "http://127.0.0.1:4321" and rt.started is not already_running
    assert stopped == ([] if already_running else [str(tmp_path)])
    with api.runtime(stack=str(tmp_path / "stack.yml"), directory=str(tmp_path), keep_up=True):
        pass
    assert len(stopped) == (0 if already_running else 1)
