"""The results database: its versioned schema, runs written as they finish (redacted), filters, and
`faasgd results` listing and comparing two batches (table, JSON, plot)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from faasgd.api import results_store
from faasgd.batch.record import BatchRecord
from faasgd.batch.redact import Redactor
from faasgd.cli.main import main
from faasgd.cli.results import compare
from faasgd.job.result import MEASURES


def make_run(workers: int, round_: int, ttt: float | None, state: str = "done") -> dict:
    return {"config_id": workers, "configuration": f"number_of_workers={workers}", "round": round_,
            "job_id": f"j{workers}{round_}", "state": state, "error": None if state == "done" else "boom",
            "store": "redis", "config": {"number_of_workers": workers, "hidden_sizes": [100], "seed": round_,
                                         "store_url": "redis://:***@h:6379/0"},
            "varying": {"number_of_workers": workers}, "time_to_target_s": ttt, "samples_per_s": 1000.0 * workers,
            "cpu_s": 2.5 * workers, "profile": [{"t": [0.1]}], "placement": ["emnist-train-1"]}


def write_batch(path, name: str, runs: list[dict], say=lambda *a, **k: None) -> int:
    record = BatchRecord(str(path), {"name": name, "target": "local"}, Redactor(), say)
    for index, run in enumerate(runs, start=1):
        record.run(index, run)
    batch_id = record.batch_id
    record.finish({"name": name, "failures": []})
    return batch_id


def test_a_new_database_has_the_schema_and_its_migration_recorded(tmp_path):
    db = results_store.open_db(tmp_path / "sub" / "r.sqlite")
    assert results_store.applied(db) == [m[0] for m in results_store.MIGRATIONS]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"batches", "runs", "schema_migrations"} <= {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert results_store.migrate(db) == results_store.SCHEMA_VERSION  # again: nothing to do


def test_a_later_migration_upgrades_an_existing_file_and_keeps_its_rows(tmp_path, monkeypatch):
    path = tmp_path / "r.sqlite"
    batch = write_batch(path, "old", [make_run(2, 1, 3.0)])
    later = (99, "a column for notes", "ALTER TABLE batches ADD COLUMN notes TEXT")
    monkeypatch.setattr(results_store, "MIGRATIONS", results_store.MIGRATIONS + (later,))
    db = results_store.open_db(path)
    assert results_store.applied(db)[-1] == 99
    assert [r["job_id"] for r in results_store.runs(db, [batch])] == ["j21"]
    assert "notes" in [c[1] for c in db.execute("PRAGMA table_info(batches)")]


def test_runs_are_kept_as_they_finish_with_their_measures_and_without_series(tmp_path):
    path = tmp_path / "r.sqlite"
    record = BatchRecord(str(path), {"name": "b", "target": "local"}, Redactor(), lambda *a, **k: None)
    record.run(1, make_run(2, 1, 3.0))
    reader = results_store.open_db(path)  # another connection sees the run before the batch ends
    (run,) = results_store.runs(reader)
    assert run["time_to_target_s"] == 3.0 and run["cpu_s"] == 5.0 and run["hidden_sizes"] == [100]
    assert "profile" not in run and set(MEASURES) <= set(run)
    assert results_store.batches(reader)[0]["finished_at"] is None
    record.finish({"name": "b"})
    assert results_store.batches(reader)[0]["finished_at"] is not None


def test_a_password_in_a_run_never_reaches_the_database(tmp_path):
    path = tmp_path / "r.sqlite"
    run = {**make_run(2, 1, None, "failed"), "error": "StoreUnavailable: redis://:hunter2@h:6379/0 refused"}
    record = BatchRecord(str(path), {"name": "b"}, Redactor.of("store_url: redis://:hunter2@h:6379/0"), print)
    record.run(1, run)
    record.finish({"name": "b"})
    files = list(tmp_path.iterdir())  # the database and its WAL
    assert path in files and not any(b"hunter2" in f.read_bytes() for f in files)
    assert "***" in results_store.runs(results_store.open_db(path))[0]["error"]


def test_filters_compare_values_as_they_print(tmp_path):
    path = tmp_path / "r.sqlite"
    write_batch(path, "b", [make_run(w, r, 1.0 * w) for w in (1, 2, 4) for r in (1, 2)])
    db = results_store.open_db(path)
    assert {r["run_index"] for r in results_store.runs(db, where={"number_of_workers": "4"})} == {5, 6}
    assert len(results_store.runs(db, where={"hidden_sizes": "100", "round": "2"})) == 3
    assert results_store.runs(db, batch_ids=[]) == []


def test_compare_means_finished_runs_per_group_and_takes_the_ratio():
    a = [make_run(2, 1, 4.0), make_run(2, 2, 6.0), make_run(4, 1, None, "failed")]
    b = [make_run(2, 1, 2.0), make_run(8, 1, 1.0)]
    rows = {row["group"]: row for row in compare(a, b, ["time_to_target_s"])}
    assert rows["number_of_workers=2"]["time_to_target_s"] == {"a": 5.0, "b": 2.0, "ratio": 0.4}
    assert rows["number_of_workers=4"]["time_to_target_s"]["a"] is None  # failed runs are left out
    assert rows["number_of_workers=8"]["runs_a"] == 0 and rows["number_of_workers=8"]["runs_b"] == 1


def test_faasgd_results_lists_filters_and_compares(tmp_path, capsys):
    path = tmp_path / "r.sqlite"
    first = write_batch(path, "before", [make_run(w, 1, 10.0 / w) for w in (1, 2)])
    second = write_batch(path, "after", [make_run(w, 1, 5.0 / w) for w in (1, 2)])
    assert main(["results", "--db", str(path), "list"]) == 0
    listed = capsys.readouterr().out
    assert "before" in listed and "after" in listed
    assert main(["results", "--db", str(path), "runs", "--batch", str(second), "--where", "number_of_workers=2",
                 "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["time_to_target_s"] == 2.5 and run["batch_id"] == second
    plot = tmp_path / "cmp.png"
    assert main(["results", "--db", str(path), "compare", str(first), str(second), "--measure", "time_to_target_s",
                 "--plot", str(plot), "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["number_of_workers=1"]["time_to_target_s"]["ratio"] == 0.5
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert main(["results", "--db", str(path), "compare", str(first), str(second)]) == 0
    assert "B/A" in capsys.readouterr().out


@pytest.mark.parametrize("argv, field", [
    (["compare", "1", "99"], "b"), (["compare", "1", "1", "--measure", "nope"], "--measure"),
    (["runs", "--where", "novalue"], "--where")])
def test_bad_input_names_the_field(tmp_path, capsys, argv, field):
    path = tmp_path / "r.sqlite"
    write_batch(path, "b", [make_run(1, 1, 1.0)])
    assert main(["results", "--db", str(path), *argv]) == 2
    assert capsys.readouterr().err.startswith(f"faasgd: error: {field}: ")


def test_a_missing_database_is_not_created_by_reading(tmp_path, capsys):
    assert main(["results", "--db", str(tmp_path / "none.sqlite"), "list"]) == 2
    assert not (tmp_path / "none.sqlite").exists()


def test_an_unwritable_database_is_said_once_and_the_batch_goes_on(tmp_path):
    said = []
    (tmp_path / "dir.sqlite").mkdir()  # a folder where the file should be
    record = BatchRecord(str(tmp_path / "dir.sqlite"), {"name": "b"}, Redactor(), lambda line, **k: said.append(line))
    record.run(1, make_run(1, 1, 1.0))
    record.finish({})
    assert len(said) == 1 and "not written" in said[0]
    with pytest.raises(sqlite3.Error):
        sqlite3.connect(tmp_path / "dir.sqlite").execute("SELECT 1 FROM runs")
