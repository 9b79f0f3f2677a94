"""The trackers through a gateway, as the how-to's Python lines run them: a job started with faasgd.api on the local
runtime, followed by faasgd.tracking (its events read through emnist-setup's status, `events=1`)."""

import pytest

from faasgd import api, tracking
from faasgd.local.services.stores import free_port
from support.paths import ROOT
from support.tensorboard_events import scalars

pytestmark = pytest.mark.e2e


def test_a_job_through_the_gateway_is_followed_by_its_trackers(tmp_path):
    pytest.importorskip("mlperf_logging")
    pytest.importorskip("tensorboardX")
    from faasgd.tracking import mllog

    directory = str(tmp_path / ".faasgd")
    with api.runtime(stack=str(ROOT / "stack.yml"), port=free_port(), directory=directory):
        job = api.train(dataset="synthetic", train_samples=2000, test_samples=500, hidden_sizes=[32],
                        number_of_workers=2, directory=directory)
        status = tracking.follow(job, tracking.sinks(mllog=str(tmp_path / "job.mllog"),
                                                     tensorboard=str(tmp_path / "board")), timeout_s=240)
    assert status["state"] == "done", status.get("result")
    assert mllog.check(str(tmp_path / "job.mllog"))
    assert len(scalars(tmp_path / "board" / job.job_id)["validation_accuracy"]) >= 3
