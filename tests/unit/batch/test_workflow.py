"""faasgd.batch.workflow (k8s/bench's pre- and post-job): bad input refused naming the field before anything is
written, the login kept as faas-cli keeps it, the wait's end, the report's index and latest."""

import os
import time

import pytest
import yaml

from faasgd.batch import workflow
from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import credentials
from faasgd.openfaas import FunctionError

MATRIX = "name: m\nrounds: 1\nmatrix: {number_of_workers: [1, 2]}\n"


def prepare_args(tmp_path, **over):
    (tmp_path / "matrix.yml").write_text(MATRIX)
    auth = tmp_path / "auth"
    auth.mkdir(exist_ok=True)
    (auth / "basic-auth-user").write_text("admin\n")
    (auth / "basic-auth-password").write_text("s3cret-9c1d\n")
    argv = ["prepare", "--matrix", str(tmp_path / "matrix.yml"), "--basic-auth-dir", str(auth),
            "--gateway", "http://127.0.0.1:9", "--config-dir", str(tmp_path / "login")]
    args = workflow.parse_args(argv)
    vars(args).update(over)
    return args


@pytest.mark.parametrize("over, field", [({"gateway": None}, "OPENFAAS_URL"), ({"config_dir": None}, "OPENFAAS_CONFIG"),
                                         ({"timeout": 0.0}, "timeout"), ({"basic_auth_dir": "/nowhere"}, "basic_auth_dir")])
def test_prepare_refuses_what_is_missing_naming_it_and_writes_nothing(tmp_path, monkeypatch, over, field):
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    monkeypatch.delenv("OPENFAAS_CONFIG", raising=False)
    with pytest.raises(ConfigError) as refused:
        workflow.prepare(prepare_args(tmp_path, **over))
    assert refused.value.field == field and "s3cret" not in str(refused.value)
    assert not (tmp_path / "login").exists()


def test_a_bad_matrix_is_refused_naming_its_key_before_the_login_is_kept(tmp_path):
    args = prepare_args(tmp_path)
    (tmp_path / "matrix.yml").write_text("matrix: {n_fetsh: [1]}\n")
    with pytest.raises(ConfigError, match="n_fetsh"):
        workflow.prepare(args)
    assert not (tmp_path / "login").exists()


def test_the_login_is_kept_as_faas_cli_keeps_it_beside_other_gateways(tmp_path):
    folder = tmp_path / "login"
    credentials.save_faas_cli_login("http://other:8080", ("u", "p"), folder)
    credentials.save_faas_cli_login("http://gateway.openfaas:8080/", ("admin", "old"), folder)
    path = credentials.save_faas_cli_login("http://gateway.openfaas:8080", ("admin", "new"), folder)
    auths = yaml.safe_load(path.read_text())["auths"]
    assert [a["gateway"] for a in auths] == ["http://other:8080", "http://gateway.openfaas:8080"]
    assert {a["auth"] for a in auths} == {"basic"} and oct(path.stat().st_mode & 0o777) == "0o600"
    env = {"OPENFAAS_CONFIG": str(folder)}
    assert credentials.faas_cli_login("http://gateway.openfaas:8080", env) == ("admin", "new")
    assert credentials.faas_cli_login("http://other:8080", env) == ("u", "p")


class Gateway:
    url = "http://gateway"

    def __init__(self, answers):
        self.answers = list(answers)

    def function_status(self, name):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_wait_outlasts_a_gateway_not_yet_up_and_replicas_not_yet_available():
    now = [0.0]
    gateway = Gateway([FaasgdError("ConnectError"), {"availableReplicas": 0}, {"availableReplicas": 2}])
    status = workflow.wait_available(gateway, 60, lambda s: now.__setitem__(0, now[0] + s), lambda: now[0])
    assert status == {"availableReplicas": 2} and now[0] == 2 * workflow.POLL_S


def test_the_wait_ends_at_its_deadline_naming_the_last_answer_and_at_once_on_a_refused_login():
    now = [0.0]
    tick = (lambda s: now.__setitem__(0, now[0] + s), lambda: now[0])
    with pytest.raises(FaasgdError, match="after 5 s: 0 replica"):
        workflow.wait_available(Gateway([{"availableReplicas": 0}] * 10), 5, *tick)
    with pytest.raises(FaasgdError, match="refused the login"):
        workflow.wait_available(Gateway([FunctionError(401, "unauthorized")]), 60, *tick)


def write_batch(results, name, states, mtime):
    folder = results / "runs" / name
    folder.mkdir(parents=True)
    rows = "".join(f"{i},{state}\n" for i, state in enumerate(states))
    (folder / "runs.csv").write_text("config_id,state\n" + rows)
    (folder / "summary.md").write_text(f"# {name}\n")
    os.utime(folder / "runs.csv", (mtime, mtime))
    os.utime(folder, (mtime, mtime))


def test_the_report_indexes_every_batch_on_the_volume_and_points_latest_at_this_one(tmp_path):
    write_batch(tmp_path, "pod-a", ["done", "failed"], time.time() - 100)
    write_batch(tmp_path, "pod-b", ["done", "done", "done"], time.time())
    said = []
    workflow.report(workflow.parse_args(["report", "--results", str(tmp_path), "--run", "pod-b"]), said.append)
    index = (tmp_path / "index.md").read_text().splitlines()
    assert index[4].startswith("| pod-a |") and "| 2 | 2 | 1 | 1 |" in index[4]
    assert index[5].startswith("| pod-b |") and "| 3 | 3 | 3 | 0 | [summary](runs/pod-b/summary.md) |" in index[5]
    assert os.readlink(tmp_path / "latest") == "runs/pod-b" and said[-1] == "# pod-b"


def test_the_report_of_a_batch_that_wrote_nothing_fails_naming_its_folder(tmp_path):
    (tmp_path / "runs" / "pod-c").mkdir(parents=True)
    assert workflow.main(["report", "--results", str(tmp_path), "--run", "pod-c"]) == 1
    assert not (tmp_path / "index.md").exists()
