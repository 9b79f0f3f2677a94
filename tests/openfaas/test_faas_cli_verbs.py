"""The real faas-cli 0.18.12 against `faasgd up`: every verb the project documents, answered as
OpenFaaS CE answers it (the fixtures: tests/openfaas/conftest.py)."""

from __future__ import annotations

import json
import stat
import time

import pytest
import yaml

from support.asgi_server import serve
from support.fake_replicas import CallbackRecorder
from support.paths import ROOT

pytestmark = [pytest.mark.openfaas, pytest.mark.serial, pytest.mark.timeout(300)]
SMALL_JOB = json.dumps({"dataset": "synthetic", "train_samples": 2000, "test_samples": 200, "hidden_sizes": [16],
                        "max_epochs": 1, "number_of_workers": 2})
TRAIN_IMAGE = "127.0.0.1:5000/emnist-train:0.1.0"


def ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def failed(done) -> str:
    """What a failed faas-cli call printed (it writes its errors to stdout or stderr)."""
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def test_login_is_needed_and_checked(faas_cli, runtime, tmp_path):
    anonymous = faas_cli("list", env={"HOME": str(tmp_path)})
    assert "faas-cli login" in failed(anonymous)
    wrong = faas_cli("login", "--gateway", runtime["url"], "-u", "admin", "--password-stdin", stdin="wrong",
                     env={"HOME": str(tmp_path)})
    assert "username or password is incorrect" in failed(wrong)
    assert f"faas-cli login --gateway {runtime['url']} -u admin --password-stdin <" in runtime["up"]
    assert runtime["password"] in runtime["up"]  # printed once, when generated


def test_version_list_and_describe(faas_cli, runtime):
    version = ok(faas_cli("version", "--warn-update=false"))
    assert "faasgd-local" in version and "orchestration: processes" in version
    assert runtime["state"]["version"] in version and "sha:" in version
    listed = ok(faas_cli("list", "-v"))
    train = next(line for line in listed.splitlines() if line.startswith("emnist-train"))
    assert TRAIN_IMAGE in train and "0001-01-01" not in train and " UTC" in train
    described = ok(faas_cli("describe", "emnist-train"))
    for expected in ("Status:             Ready", "Function Process:   python index.py", "- store-password",
                     "store_url: redis://redis.openfaas-fn:6379/0", "com.openfaas.scale.max: 5", "Memory: 1Gi"):
        assert expected in described, described


def test_deploy_the_stack_then_no_drift(faas_cli, runtime):
    before = runtime["gateway"].function_status("emnist-setup")
    deployed = ok(faas_cli("deploy", "-f", "stack.yml"))
    functions = yaml.safe_load((ROOT / "stack.yml").read_text())["functions"]
    assert deployed.count("Deployed. 202 Accepted.") == len(functions) >= 6  # emnist-* and stacking-*
    assert "YAML matches deployment, no differences found." in ok(faas_cli("diff", "-f", "stack.yml"))
    after = runtime["gateway"].wait_for_replicas("emnist-setup", 1, 60)  # the update rolled out
    assert after["createdAt"] == before["createdAt"] and set(after["pids"]).isdisjoint(before["pids"])
    runtime["gateway"].wait_for_replicas("emnist-train", 2, 60)


def test_deploy_an_image_by_name_and_remove_it(faas_cli, runtime, tmp_path):
    # A folder without stack.yml: there faas-cli would deploy the stack and ignore --image.
    deployed = ok(faas_cli("deploy", "--image", TRAIN_IMAGE, "--name", "train-copy", "-e", "n_push=5",
                           "--label", "team=ml", cwd=tmp_path))
    assert "Deployed. 202 Accepted." in deployed
    ok(faas_cli("ready", "train-copy", "--attempts", "60", cwd=tmp_path))
    copy = runtime["gateway"].function_status("train-copy")
    assert copy["envVars"] == {"n_push": "5"} and copy["labels"] == {"team": "ml"} and copy["image"] == TRAIN_IMAGE
    unknown = failed(faas_cli("deploy", "--image", "docker.io/someone/else:1", "--name", "other", cwd=tmp_path))
    assert "Unexpected status: 400" in unknown
    assert "docker.io/someone/else:1" in unknown and "add a function with this image" in unknown
    assert "Removing old function." in ok(faas_cli("remove", "train-copy", cwd=tmp_path))
    assert "No existing function to remove" in failed(faas_cli("remove", "train-copy", cwd=tmp_path))
    assert "train-copy" not in ok(faas_cli("list", cwd=tmp_path))


def test_logs(faas_cli):
    everything = ok(faas_cli("logs", "emnist-setup", "--tail=false", "--since", "1h"))
    assert "faasgd: starting emnist-setup-" in everything
    last = ok(faas_cli("logs", "emnist-train", "--tail=false", "--lines", "1", "--instance", "--output", "json"))
    messages = [json.loads(line) for line in last.splitlines()]
    assert len(messages) == len({m["instance"] for m in messages}) >= 1  # one line per replica
    assert all(m["name"] == "emnist-train" and m["namespace"] == "openfaas-fn" for m in messages)


def test_secrets_are_files_never_shown(faas_cli, runtime):
    value = "v4lue-for-the-test-only"
    outputs = [ok(faas_cli("secret", "create", "api-token", "--from-literal", value))]
    path = runtime["dir"] / "secrets" / "api-token"
    assert path.read_text() == value and stat.S_IMODE(path.stat().st_mode) == 0o600
    outputs.append(faas_cli("secret", "create", "api-token", "--from-literal", value).stdout)
    assert "already exists" in outputs[-1]
    outputs.append(ok(faas_cli("secret", "list")))
    assert "api-token" in outputs[-1] and "basic-auth" not in outputs[-1]
    outputs.append(ok(faas_cli("secret", "update", "api-token", "--from-literal", "v2" + value)))
    assert path.read_text() == "v2" + value
    outputs.append(ok(faas_cli("secret", "remove", "api-token")))
    outputs.append(failed(faas_cli("secret", "remove", "api-token")))
    assert "Unable to find secret: api-token" in outputs[-1] and not path.exists()
    assert not [o for o in outputs if value in o]


def test_namespace_list(faas_cli):
    assert ok(faas_cli("namespace", "list")).split() == ["Namespaces:", "-", "openfaas-fn"]


def test_invoke_sync_async_and_with_a_callback(faas_cli, runtime):
    answer = json.loads(ok(faas_cli("invoke", "emnist-setup", stdin=SMALL_JOB)))
    assert answer["job_id"] and answer["number_of_workers"] == 2
    queued = faas_cli("invoke", "emnist-setup", "--async", stdin=SMALL_JOB)
    assert queued.returncode == 0 and "Function submitted asynchronously." in queued.stderr
    callback = CallbackRecorder()
    with serve(callback) as url:
        ok(faas_cli("invoke", "emnist-setup", "--async", "-H", f"X-Callback-Url: {url}/done", stdin=SMALL_JOB))
        deadline = time.monotonic() + 60
        while not callback.received and time.monotonic() < deadline:
            time.sleep(0.1)
    headers, body = callback.received[0]
    assert headers["x-function-status"] == "202" and json.loads(body)["job_id"]
    assert "404" in failed(faas_cli("invoke", "no-such-function", stdin="{}"))


def test_up_without_docker_fails_at_the_build_and_deploy_then_works(faas_cli, runtime, project):
    before = runtime["gateway"].function_status("emnist-train")["createdAt"]
    # no Docker daemon, on every machine (tests/docker runs `faas-cli up` with one, built, pushed and deployed)
    up = faas_cli("up", "--skip-push", "-f", "stack.yml", timeout=300,
                  env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert "Errors received during build" in failed(up)
    assert (project / "build" / "emnist-train" / "function" / "handler.py").is_file()  # faas-cli's own layout
    assert "Deploying" not in up.stdout  # it stopped at the build
    assert "Deployed. 202 Accepted." in ok(faas_cli("deploy", "-f", "stack.yml"))
    assert runtime["gateway"].function_status("emnist-train")["createdAt"] == before
