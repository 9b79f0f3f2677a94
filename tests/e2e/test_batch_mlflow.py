"""`./test.sh MATRIX --mlflow sqlite:///FILE` end to end on the local target, as docs/how-to/tracking.md shows it:
the batch is one MLflow experiment, each configuration a parent run and each of its rounds a child run (MLflow's
`mlflow.parentRunId`), read back with MLflow's own client from its SQLite backend.

The page's matrix and command line are run as typed, the matrix file's path and the SQLite file's made absolute;
added only: where the batch puts its runtime (`--port`, `--dir`), its folder (`--out`) and no results database."""

import json
import shlex
import subprocess

import pytest

from faasgd.local.services.stores import free_port
from support.paths import ROOT

pytestmark = pytest.mark.e2e
mlflow = pytest.importorskip("mlflow")
PAGE = ROOT / "docs" / "how-to" / "tracking.md"


def documented() -> tuple[str, list[str]]:
    """The page's matrix (its yaml block) and its `./test.sh` line, split."""
    text = PAGE.read_text()
    matrix = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    line = next(line for line in text.splitlines() if line.startswith("./test.sh "))
    return matrix, shlex.split(line)


def test_a_batch_is_one_experiment_with_configurations_as_parents_and_rounds_as_children(tmp_path):
    from mlflow import MlflowClient

    text, words = documented()
    out, uri = tmp_path / "out", f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / words[1]).write_text(text)
    assert words[2:] == ["--mlflow", "sqlite:///mlflow.db"]
    run = subprocess.run([words[0], str(tmp_path / words[1]), "--mlflow", uri, "--out", str(out), "--port",
                          str(free_port()), "--dir", str(tmp_path / ".faasgd"), "--results-db", "none"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert any((tmp_path / "mlruns").rglob("result.json"))  # artifacts beside the SQLite file, not in the checkout
    client = MlflowClient(tracking_uri=uri)
    experiments = [e for e in client.search_experiments() if e.name.startswith("test.sh tracked ")]
    assert len(experiments) == 1 and experiments[0].tags["rounds"] == "2"
    runs = client.search_runs([experiments[0].experiment_id])
    parents = {r.info.run_name: r for r in runs if "mlflow.parentRunId" not in r.data.tags}
    assert sorted(parents) == ["number_of_workers=1", "number_of_workers=2"]
    records = json.loads((out / "runs.json").read_text())
    for label, parent in parents.items():
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        mine = [r for r in records if r["configuration"] == label]
        assert sorted(c.data.tags["round"] for c in children) == ["1", "2"]
        assert {c.data.tags["job_id"] for c in children} == {r["job_id"] for r in mine}  # the rounds' own jobs
        assert parent.data.params["number_of_workers"] == label[-1] and parent.info.status == "FINISHED"
        assert parent.data.metrics["rounds"] == 2 and parent.data.metrics["rounds_done"] == 2
        assert parent.data.metrics["samples"] == pytest.approx(sum(r["samples"] for r in mine) / 2)  # the mean
        for child in children:
            record = next(r for r in mine if r["job_id"] == child.data.tags["job_id"])
            assert child.data.params["seed"] == str(record["config"]["seed"]) and child.info.status == "FINISHED"
            assert child.data.metrics["cost_usd"] == pytest.approx(record["cost_usd"])  # at the matrix's prices
            assert len(client.get_metric_history(child.info.run_id, "validation_accuracy")) >= 2
