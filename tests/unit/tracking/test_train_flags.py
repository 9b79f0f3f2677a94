"""`faasgd train`'s tracker flags, checked before anything starts: each refusal names its flag."""

import argparse
import sys

import pytest

from faasgd.cli import train
from faasgd.errors import ConfigError


def args(**given):
    flags = {"mllog": None, "tensorboard": None, "mlflow": None, "metrics_lines": False, "json": False}
    return argparse.Namespace(**{**flags, **given})


def test_no_tracker_asked_imports_nothing():
    assert train.trackers(args()) == []


def test_metric_lines_and_json_both_want_stdout():
    with pytest.raises(ConfigError) as error:
        train.trackers(args(metrics_lines=True, json=True))
    assert error.value.field == "--metrics-lines"


def test_mlflow_without_a_uri_takes_the_environments_or_is_refused(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(ConfigError) as error:
        train.trackers(args(mlflow=""))
    assert error.value.field == "--mlflow" and "MLFLOW_TRACKING_URI" in str(error.value)


def test_a_missing_extra_names_the_flag_that_needs_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if the extra `track` were not installed
    monkeypatch.delitem(sys.modules, "faasgd.tracking.tensorboard", raising=False)
    with pytest.raises(ConfigError) as error:
        train.trackers(args(tensorboard=str(tmp_path / "board")))
    assert error.value.field == "--tensorboard" and "faasgd[track]" in str(error.value)


def test_a_file_in_no_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError) as error:
        train.trackers(args(mllog=str(tmp_path / "no" / "job.mllog")))
    assert error.value.field == "--mllog"
