"""`./test.sh --mlflow`: the URI the flag or the environment names, refused before anything is written when there is
none or the matrix is stacking's; the parents' figures are means over the rounds that know them."""

import pytest

from faasgd.batch import __main__ as batch_main
from faasgd.batch.experiment import tracking_uri
from faasgd.errors import ConfigError
from support.paths import ROOT


def test_the_flags_uri_else_the_environments_else_refused(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(None, "emnist") is None
    assert tracking_uri("sqlite:///m.db", "emnist") == "sqlite:///m.db"
    with pytest.raises(ConfigError) as raised:
        tracking_uri("", "emnist")
    assert raised.value.field == "--mlflow" and "MLFLOW_TRACKING_URI" in str(raised.value)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert tracking_uri("", "emnist") == "http://127.0.0.1:5000"
    with pytest.raises(ConfigError) as raised:
        tracking_uri("", "stacking")
    assert raised.value.field == "--mlflow" and "stacking" in str(raised.value)


def test_a_stacking_matrix_with_mlflow_exits_2_writing_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    matrix = str(ROOT / "bench" / "matrix" / "stacking.yml")
    code = batch_main.main([matrix, "--mlflow", "sqlite:///m.db", "--out", str(out)])
    assert code == 2 and "--mlflow" in capsys.readouterr().err and not out.exists()


def test_a_parents_figures_are_the_means_of_its_rounds_that_know_them():
    pytest.importorskip("mlflow")
    from faasgd.tracking.mlflow_batch import means

    assert means([{"samples": 100.0, "time_to_target_s": 2.0}, {"samples": 300.0}]) == \
        {"time_to_target_s": 2.0, "samples": 200.0}


def test_a_tracking_failure_is_said_once_and_the_batch_goes_on_without_it(monkeypatch):
    pytest.importorskip("mlflow")
    from faasgd.batch.experiment import Experiment
    from faasgd.batch.matrix import Configuration
    from faasgd.batch.redact import Redactor
    from faasgd.tracking import mlflow_batch

    class Gone:
        name, rounds = "test.sh m now", 0

        def __init__(self, *args, **kwargs):
            pass

        def round(self, found):
            Gone.rounds += 1
            raise ConnectionError("http://u:secret@mlflow.test: connection refused")

    monkeypatch.setattr(mlflow_batch, "BatchExperiment", Gone)
    said = []
    experiment = Experiment("http://mlflow.test", type("M", (), {"name": "m"})(), {"started_at": "now"},
                            Redactor({"secret"}), lambda line, error=False: said.append((line, error)))
    configuration = Configuration(1, {"number_of_workers": 1}, {"number_of_workers": 1})
    for round_number in (1, 2):
        experiment.on_job(configuration, {"round": round_number, "state": "done"}, {"events": []})
    experiment.finish()
    failures = [line for line, error in said if error]
    assert Gone.rounds == 1 and experiment.failed and len(failures) == 1  # said once; later rounds not tried
    assert "ConnectionError" in failures[0] and "secret" not in failures[0]
