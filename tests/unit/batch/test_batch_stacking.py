"""Stacking matrices in test.sh: parsing and validation (nothing written for bad input), the runs through a
gateway whose stacking-driver runs the real flow in this process, the batch's outputs and results rows, and
`faasgd results` over them."""

import csv
import json

import httpx
import pytest
from support.stacking_drive import SMALL, in_process

from faasgd.api import results_store
from faasgd.batch.__main__ import main
from faasgd.batch.matrix import MatrixError, parse_matrix, parse_matrix_text
from faasgd.batch.outputs import write_outputs
from faasgd.batch.record import KEPT_BY_WORKLOAD, BatchRecord
from faasgd.batch.redact import Redactor
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import Target
from faasgd.cli.main import main as faasgd_main
from faasgd.errors import ConfigError
from faasgd.openfaas import GatewayClient
from faasgd.stacking import flow, records
from faasgd.stacking.config import load_stacking
from faasgd.store import open_store

MATRIX = f"""
name: stack-small
workload: stacking
rounds: 2
fixed: {json.dumps({**SMALL, "n_samples": 60})}
matrix:
  trainers_num: [2, 3]
  transfer: [inline, s3]
"""


class InProcessDriver(Target):
    """A target whose stacking-driver parses the body as the function does (no S3 space configured: s3 is a
    400 on transfer) and runs the real flow here, on a memory store; it records every body it got."""

    name = "fake"

    def __init__(self):
        self.bodies = []
        self.store = open_store("memory://stackbatch")
        self.gateway = GatewayClient("http://gateway.test", transport=httpx.MockTransport(self.answer))

    def set_replicas(self, replicas):
        raise AssertionError("a stacking run scales nothing")

    def answer(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/function/stacking-driver" and request.method == "POST"
        body = json.loads(request.content)
        self.bodies.append(body)
        try:
            config = load_stacking({}, body)
        except ConfigError as error:
            return httpx.Response(400, json={"error": str(error), "field": error.field})
        job_id = records.create_job(self.store, config)
        return httpx.Response(200, json={"job_id": job_id, **flow.drive(self.store, job_id, config,
                                                                         in_process(self.store, job_id, config))})


@pytest.fixture(scope="module")
def batch():
    """The matrix run through the in-process driver: (matrix, target, runs)."""
    matrix = parse_matrix_text(MATRIX, "m")
    target = InProcessDriver()
    return matrix, target, run_batch(matrix, target, matrix.rounds, 60.0, lambda line: None)


def test_a_stacking_matrix_is_parsed_with_stackings_keys():
    matrix = parse_matrix_text(MATRIX, "m")
    assert matrix.workload == "stacking" and matrix.rounds == 2
    assert [c.label for c in matrix.configurations] == [
        "trainers_num=2 transfer=inline", "trainers_num=2 transfer=s3",
        "trainers_num=3 transfer=inline", "trainers_num=3 transfer=s3"]
    assert all(c.workload == "stacking" and c.values["n_samples"] == 60 for c in matrix.configurations)
    assert parse_matrix({"fixed": {"dataset": "synthetic"}}).workload == "emnist"  # the default


@pytest.mark.parametrize("document, field, words", [
    ({"workload": "stacking", "matrix": {"number_of_workers": [2]}}, "matrix.number_of_workers", "stacking config key"),
    ({"workload": "stacking", "fixed": {"trainers_num": 0}}, "trainers_num", "[1, 64]"),
    ({"workload": "stacking", "matrix": {"transfer": ["inline", "ftp"]}}, "transfer", "transfer=ftp"),
    ({"workload": "stacking", "fixed": {"store_url": "redis://h:6379/0"}}, "fixed.store_url", "unknown key"),
    ({"workload": "stacking", "fixed": {"n_samples": 30, "cv_folds": 20}}, "n_samples", "2 x cv_folds"),
    ({"workload": ["emnist", "stacking"]}, "workload", "one workload per matrix"),
    ({"workload": "stacking", "matrix": {"workload": ["emnist"]}}, "matrix.workload", "top-level"),
    ({"workload": "lambda"}, "workload", "emnist, stacking"),
    ({"matrix": {"trainers_num": [4]}}, "matrix.trainers_num", "emnist config key"),  # emnist's keys by default
])
def test_a_bad_stacking_matrix_names_the_field(document, field, words):
    with pytest.raises(MatrixError) as info:
        parse_matrix(document)
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_a_bad_stacking_matrix_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.yml").write_text(MATRIX.replace("[2, 3]", "[2, 65]"))
    assert main(["m.yml", "--out", "out", "--results-db", "r.sqlite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("test.sh: error: trainers_num: ") and "trainers_num=65" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yml"]


def test_a_dry_run_refuses_a_stacking_matrix_its_functions_could_not_hold(tmp_path, capsys):
    """The stacking driver's admission (faasgd.stacking.admission) runs on every configuration, before any run."""
    (tmp_path / "m.yml").write_text("workload: stacking\nfixed: {n_features: 50000}\n"
                                    "matrix: {n_samples: [300, 100000]}\n")
    assert main([str(tmp_path / "m.yml"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("test.sh: error: n_samples: a 100,000 x 50,000 dataset needs ") and "memory_limit=1Gi" in err
    assert err.count("\n") == 1


def test_the_dry_run_lists_stacking_runs(tmp_path, capsys):
    (tmp_path / "m.yml").write_text(MATRIX)
    assert main([str(tmp_path / "m.yml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 configuration(s) x 2 round(s) = 8 run(s)" in out and "trainers_num=3 transfer=s3" in out
    assert "emnist-train" not in out


def test_rounds_vary_the_seed_and_a_failed_run_does_not_stop_the_batch(batch):
    matrix, target, runs = batch
    assert len(runs) == len(target.bodies) == 8
    assert [body["seed"] for body in target.bodies] == [3] * 4 + [4] * 4  # seed + round - 1
    assert [(r["round"], r["configuration"], r["state"]) for r in runs[:4]] == [
        (1, "trainers_num=2 transfer=inline", "done"), (1, "trainers_num=2 transfer=s3", "failed"),
        (1, "trainers_num=3 transfer=inline", "done"), (1, "trainers_num=3 transfer=s3", "failed")]
    failed = runs[1]
    assert "FunctionError" in failed["error"] and "s3 is not available" in failed["error"]
    for run in (r for r in runs if r["state"] == "done"):
        assert run["workload"] == "stacking" and run["job_id"] and run["config"]["seed"] == 3 + run["round"] - 1
        assert len(run["base_scores"]) == run["config"]["trainers_num"]
        assert run["best_base_score"] == max(run["base_scores"]) and 0 < run["ensemble_score"] <= 1
        phases = [run[k] for k in flow.PHASES]
        assert all(p >= 0 for p in phases) and sum(phases) <= run["total_s"] + 1e-3 and run["call_retries"] == 0
    assert target.store.get_record(runs[0]["job_id"], "config")["trainers_num"] == 2  # the job the driver made


def test_the_outputs_have_stackings_columns_tables_and_phase_plot(batch, tmp_path):
    matrix, _, runs = batch
    meta = {"name": matrix.name, "workload": "stacking", "matrix": matrix.source, "rounds": 2, "seeds": [3, 4],
            "failures": []}
    written = write_outputs(tmp_path, runs, meta, Redactor())
    with open(tmp_path / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8
    for column in ("trainers_num", "transfer", "concurrent_training", "seed", "models", *flow.MEASURES):
        assert column in rows[0], column
    assert "time_to_target_s" not in rows[0] and "number_of_workers" not in rows[0]
    done = [(row, run) for row, run in zip(rows, runs) if run["state"] == "done"]
    for row, run in done:
        assert float(row["ensemble_score"]) == pytest.approx(run["ensemble_score"])
        assert float(row["train_s"]) == pytest.approx(run["train_s"])
        assert [float(s) for s in row["base_scores"].split(",")] == pytest.approx(run["base_scores"])
        assert json.loads(row["models"])[0]["model"] == "LinearSVR"
    assert [row["state"] for row in rows if row["transfer"] == "s3"] == ["failed"] * 4
    output = (tmp_path / "output.txt").read_text()
    assert "== trainers_num=2 transfer=inline ==" in output and output.count("Avg") == 4
    totals = [run["total_s"] for run in runs if run["configuration"] == "trainers_num=3 transfer=inline"]
    assert f"{sum(totals) / 2:.3f}" in output.split("== trainers_num=3 transfer=inline ==")[1].split("==")[0]
    assert "round 1: failed: FunctionError" in output
    summary = (tmp_path / "summary.md").read_text()
    assert "| trainers_num=2 transfer=inline | 2 / 2 |" in summary and "| trainers_num=2 transfer=s3 | 0 / 2 |" \
        in summary and "Ensemble score" in summary and "stacking ensemble training" in summary
    assert written == {"phases": "phases.png"} and "phases.png" in summary
    assert (tmp_path / "phases.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "profiles").exists()


def test_results_store_keeps_stacking_runs_and_faasgd_results_reads_them(batch, tmp_path, capsys):
    _, _, runs = batch
    path = tmp_path / "r.sqlite"
    ids = []
    for workload_runs in (runs, runs[:4]):
        record = BatchRecord(str(path), {"name": "stack", "workload": "stacking"}, Redactor(), print,
                             KEPT_BY_WORKLOAD["stacking"])
        for index, run in enumerate(workload_runs, start=1):
            record.run(index, run)
        ids.append(record.batch_id)
        record.finish({"finished_at": "now"})
    db = results_store.open_db(path, create=False)
    stored = results_store.runs(db, [ids[0]], {"transfer": "inline", "trainers_num": "3"})
    assert [(r["round"], r["ensemble_score"], r["total_s"]) for r in stored] == [
        (r["round"], r["ensemble_score"], r["total_s"]) for r in runs if r["configuration"] == "trainers_num=3 transfer=inline"]
    assert stored[0]["base_scores"] == runs[2]["base_scores"] and stored[0]["state"] == "done"
    db.close()
    capsys.readouterr()
    assert faasgd_main(["results", "--db", str(path), "list"]) == 0
    assert faasgd_main(["results", "--db", str(path), "runs", "--where", "transfer=s3"]) == 0
    assert faasgd_main(["results", "--db", str(path), "compare", str(ids[0]), str(ids[1])]) == 0
    capsys.readouterr()
    assert faasgd_main(["results", "--db", str(path), "compare", str(ids[0]), str(ids[1]), "--measure", "total_s",
                        "--measure", "ensemble_score", "--json"]) == 0
    rows = {row["group"]: row for row in json.loads(capsys.readouterr().out)}
    inline = [r for r in runs[:4] if r["configuration"] == "trainers_num=2 transfer=inline"][0]
    assert rows["trainers_num=2 transfer=inline"]["ensemble_score"]["b"] == pytest.approx(inline["ensemble_score"])
    assert rows["trainers_num=2 transfer=s3"]["total_s"] == {"a": None, "b": None, "ratio": None}
