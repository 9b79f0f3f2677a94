"""`faasgd sweep FILE`: the file checked whole before any trial (each bad key a ConfigError naming it), and the
objective over jobs: the figure of a job at its target, a pruned trial short of it, a failed trial for a failed job.
Jobs here are stand-ins; tests/e2e/test_sweep_e2e.py runs real ones through the local runtime."""

import pytest

from faasgd.errors import ConfigError
from faasgd.tracking.sweep_file import parse_sweep

optuna = pytest.importorskip("optuna")

from faasgd.tracking import sweep  # noqa: E402

GOOD = {"study": "s", "storage": "sqlite:///sweep.db", "objective": "time_to_target", "trials": 3, "seed": 0,
        "fixed": {"dataset": "synthetic", "train_samples": 2000},
        "space": {"learning_rate": {"low": 0.01, "high": 0.5, "log": True}, "number_of_workers": {"low": 1, "high": 3},
                  "n_push": [1, 5], "store": ["redis", "memcached"]}}


def with_(path: str, value):
    data = {**GOOD, "space": dict(GOOD["space"]), "fixed": dict(GOOD["fixed"])}
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return data


@pytest.mark.parametrize("path, value, field", [
    ("objective", "accuracy", "objective"),
    ("trials", 0, "trials"),
    ("trials", True, "trials"),
    ("storage", "sweep.db", "storage"),
    ("storage", "sqlite:///no/such/folder/sweep.db", "storage"),
    ("study", None, "study"),
    ("space.learning_rate", {"low": 0.5, "high": 0.1}, "space.learning_rate.high"),
    ("space.learning_rate", {"low": 0, "high": 0.1, "log": True}, "space.learning_rate.low"),
    ("space.learning_rate", {"low": "a", "high": 0.1}, "space.learning_rate.low"),
    ("space.number_of_workers", {"low": 0, "high": 2}, "space.number_of_workers"),  # as a job's request is checked
    ("space.n_push", [], "space.n_push"),
    ("space.store_url", ["redis://h:1/0"], "space.store_url"),  # a store location comes from the functions
    ("space.n_fetsh", [1], "space.n_fetsh"),
    ("fixed.train_samples", -1, "fixed.train_samples"),
    ("fixed.learning_rate", 0.1, "space.learning_rate"),  # in both
    ("samplers", "tpe", "samplers"),
])
def test_a_bad_sweep_file_names_its_field(path, value, field):
    with pytest.raises(ConfigError) as raised:
        parse_sweep(with_(path, value))
    assert raised.value.field == field


def test_a_good_file_is_its_sweep():
    plan = parse_sweep(GOOD)
    assert plan.figure == "time_to_target_s" and plan.trials == 3
    assert [(d.name, d.choices) for d in plan.space][2:] == [("n_push", (1, 5)), ("store", ("redis", "memcached"))]


class FakeJob:
    def __init__(self, job_id: str, result: dict):
        self.job_id, self.result = job_id, result

    def wait(self, timeout_s):
        return {"state": self.result["state"], "result": {"job_id": self.job_id, **self.result}}


def test_trials_minimise_the_figure_prune_jobs_short_of_the_target_and_fail_failed_jobs(tmp_path):
    plan = parse_sweep({**GOOD, "storage": f"sqlite:///{tmp_path / 'sweep.db'}", "space": {"n_push": [1, 5, 10]}})
    outcomes = iter([{"state": "done", "reached_target": True, "time_to_target_s": 3.0},
                     {"state": "done", "reached_target": False, "time_to_target_s": None},
                     {"state": "failed", "error": "store unavailable"},
                     {"state": "done", "reached_target": True, "time_to_target_s": 1.5}])
    started, lines = [], []

    def start(config):
        started.append(config)
        return FakeJob(f"j{len(started)}", next(outcomes))

    study = sweep.run(plan, start, lines.append, trials=4)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED", "FAIL", "COMPLETE"]
    assert all(c["dataset"] == "synthetic" and c["n_push"] in (1, 5, 10) for c in started)
    assert sweep.best(study)["value"] == 1.5 and sweep.best(study)["job_id"] == "j4"
    assert study.trials[1].user_attrs["reached_target"] is False and "failed" in lines[2]
    again = sweep.run(plan, start=lambda config: FakeJob("j5", {"state": "done", "reached_target": True,
                                                                  "time_to_target_s": 9.0}), say=lines.append, trials=1)
    assert len(again.trials) == 5  # the study in its storage goes on


def test_the_command_refuses_a_bad_file_with_exit_2_writing_nothing(tmp_path, capsys):
    from faasgd.cli.main import main

    bad = tmp_path / "sweep.yml"
    bad.write_text(f"study: s\nstorage: sqlite:///{tmp_path / 'sweep.db'}\nobjective: time_to_target\n"
                   "space: {learning_rate: {low: 0.5, high: 0.1}}\n")
    assert main(["sweep", str(bad), "--dir", str(tmp_path / ".faasgd")]) == 2
    assert "space.learning_rate.high" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yml"]  # no storage, no runtime
    assert main(["sweep", str(tmp_path / "none.yml")]) == 2 and "FILE" in capsys.readouterr().err
