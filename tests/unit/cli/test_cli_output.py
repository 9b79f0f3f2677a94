"""With --json stdout holds exactly one JSON document; progress and text for a person go to stderr, or nowhere
with --quiet. In-process: the job's run and the status polls are stand-ins that feed real progress output."""

import json

import pytest

from faasgd.cli import direct, output, status
from faasgd.cli.main import main
from faasgd.job.result import missing

JOB = "j0123456789abcde"  # "j" and 15 hex digits, as emnist-setup makes them
SMALL = ["--dataset", "synthetic", "--train-samples", "2000", "--test-samples", "200", "--hidden-sizes", "8"]


def statuses(config: dict, job_id: str) -> tuple[dict, dict]:
    """A running status (one worker at epoch 1) and the done one with its result."""
    worker = {"epoch": 1, "accuracy": 0.7, "loss": 0.6, "samples_per_s": 900.0, "pushes": 3, "fetches": 3,
              "conflicts": 0, "state": "running"}
    running = {"job_id": job_id, "state": "running", "config": config, "workers": [worker, None], "result": None}
    result = {**missing(job_id, ""), "state": "done", "error": None, "number_of_workers": config["number_of_workers"],
              "samples": 4000, "wall_s": 0.5}
    return running, {**running, "state": "done", "workers": [{**worker, "state": "finished"}] * 2, "result": result}


@pytest.fixture
def fake_run(monkeypatch):
    """direct.run_job as a stand-in: one running status to on_status, then the done status."""
    seen = {}

    def run_job(config, store, job_id, timeout_s, on_status=None, on_interrupt=None):
        running, done = statuses(config.to_dict(), job_id)
        on_status(running)
        seen["result"] = done["result"]
        return done

    monkeypatch.setattr(direct, "run_job", run_job)
    return seen


def train(*flags):
    return main(["train", "--direct", "--store-url", "memory://cli-output", *SMALL, *flags])


def test_train_json_prints_one_document_on_stdout_and_the_progress_and_summary_on_stderr(fake_run, capsys):
    assert train("--workers", "4", "--batch-size", "128", "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == fake_run["result"]  # the whole of stdout is the one document
    assert "worker  0  epoch" in err and "model accuracy" in err and "4 worker(s), synthetic" in err
    assert "note: 4 workers x 128 rows = 512 rows a step" in err  # the summary's batch note, beside it


def test_train_json_quiet_prints_nothing_but_the_document(fake_run, capsys):
    assert train("--json", "--quiet") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == fake_run["result"] and err == ""


def test_train_without_json_prints_progress_and_summary_on_stdout_and_quiet_drops_the_progress(fake_run, capsys):
    assert train("--workers", "4", "--global-batch-size", "128") == 0
    out, err = capsys.readouterr()
    assert "worker  0  epoch" in out and "model accuracy" in out and err == ""
    assert "note:" not in out  # 4 x 32: the rows a step of one worker
    assert train("--quiet") == 0
    out, err = capsys.readouterr()
    assert "model accuracy" in out and "worker  0  epoch" not in out and "worker(s)" not in out


def test_status_watch_json_keeps_the_live_progress_off_stdout(monkeypatch, capsys):
    running, done = statuses({"number_of_workers": 2, "batch_size": 128, "max_epochs": 3}, JOB)

    def wait_for_job(read, timeout_s, on_status=None):
        on_status(running)
        return done

    monkeypatch.setattr(status, "wait_for_job", wait_for_job)
    argv = ["status", JOB, "--direct", "--store-url", "memory://cli-status", "--watch", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == done and "worker  0  epoch" in err
    assert main(argv + ["--quiet"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == done and err == ""


def test_the_route_ends_with_the_command_even_when_it_fails(capsys):
    assert main(["train", "--direct", "--store-url", "memory://x", "--batch-size", "0", "--json", "--quiet"]) == 2
    assert "batch_size" in capsys.readouterr().err  # errors reach stderr under --quiet
    assert not output.console().quiet and not output.progress_console().stderr
    output.console().print("after", highlight=False, markup=False)
    assert capsys.readouterr().out == "after\n"


def test_every_flag_combination_of_the_global_batch_reaches_the_config_or_names_the_fields(capsys):
    assert main(["train", "--dry-run", "--global-batch-size", "256", "--workers", "4"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert (config["batch_size"], config["global_batch_size"]) == (64, 256)
    assert main(["train", "--dry-run", "--global-batch-size", "256", "--batch-size", "32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("faasgd: error: global_batch_size: ") and "batch_size 32" in err[0]


def test_evaluate_and_trace_json_are_one_document_each(monkeypatch, tmp_path, capsys):
    from faasgd.job import model_file

    answer = {"test_accuracy": 0.8, "reported_test_accuracy": 0.8, "rows": 200, "dataset": "synthetic"}
    monkeypatch.setattr(model_file, "from_npz", lambda path: object())
    monkeypatch.setattr(model_file, "evaluate_file", lambda found, dataset, rows: answer)
    assert main(["evaluate", str(tmp_path / "m.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == answer
    assert main(["status", JOB, "--trace", "--trace-dir", str(tmp_path), "--json"]) == 0  # no spans: an empty list
    assert json.loads(capsys.readouterr().out) == []
