"""faasgd.api end to end, as a notebook runs it: start the local runtime from Python, train a small synthetic
job through its gateway, wait, read the result as a DataFrame, load and evaluate the model, ask for the job
on a store that does not hold it, and stop the runtime the session started."""

import pytest

from faasgd import api
from faasgd.errors import JobNotFound
from faasgd.local.lifecycle import control
from faasgd.local.services.stores import free_port
from support.paths import ROOT

pytestmark = pytest.mark.e2e
SMALL = {"dataset": "synthetic", "train_samples": 4000, "test_samples": 500, "hidden_sizes": [32]}


def test_a_notebook_session_from_runtime_to_model(tmp_path):
    directory = str(tmp_path / ".faasgd")
    with api.runtime(stack=str(ROOT / "stack.yml"), port=free_port(), directory=directory) as rt:
        assert rt.started and control.read_state(directory)["gateway_url"] == rt.gateway_url
        job = api.train(SMALL, number_of_workers=2, max_epochs=6, target_accuracy=0.8, directory=directory)
        assert job.info["number_of_workers"] == 2 and job.info["dataset"] == "synthetic"
        status = job.wait(timeout_s=240)
        assert status["state"] == "done", status.get("result")

        frame = api.results(job, as_frame=True)
        assert list(frame["job_id"]) == [job.job_id] and frame.loc[0, "reached_target"]
        assert frame.loc[0, "samples"] > 0 and frame.loc[0, "final_validation_accuracy"] >= 0.8

        model = api.load_model(job)
        assert model.job_id == job.job_id and model.source == "crossing"
        answer = api.evaluate(model)
        assert answer["test_accuracy"] == answer["reported_test_accuracy"] == frame.loc[0, "final_test_accuracy"]

        again = api.job(job.job_id, directory=directory)  # the same job, found again by its id
        assert again.status()["result"]["job_id"] == job.job_id
        with pytest.raises(JobNotFound) as error:
            api.job(job.job_id, store="memcached", directory=directory).status()
        message = str(error.value)
        assert "the function's store 'memcached' (its stores: default, redis, memcached)" in message
        assert "store=None" in message and "--store redis" in message
    assert control.read_state(directory) is None  # the block stopped the runtime it started


def test_a_runtime_started_in_a_terminal_outlives_the_sessions_stop_runtime(tmp_path):
    """The tutorial's last step, `api.stop_runtime()`, after a session that found a runtime a terminal started."""
    import subprocess
    import sys

    directory = str(tmp_path / ".faasgd")
    up = subprocess.run([sys.executable, "-m", "faasgd.cli", "up", "--port", str(free_port()), "--dir", directory,
                         "--filter", "emnist-setup", "-f", str(ROOT / "stack.yml")],
                        capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        rt = api.start_runtime(stack=str(ROOT / "stack.yml"), directory=directory)
        assert not rt.started
        assert api.stop_runtime(directory) == []
        assert control.serving(control.read_state(directory))  # still up, still answering
    finally:
        assert control.down(directory)  # the terminal's `faasgd down`
