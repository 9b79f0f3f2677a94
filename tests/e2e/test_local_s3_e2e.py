"""`faasgd up` with a stack whose functions set `channel: s3` (and `transfer: s3`), nothing else done by hand: no S3
server started, no bucket made, no secret created, no s3_url or endpoint in the stack. The runtime starts its own
S3 server; a grad_avg job with `--channel s3` ends done with its rounds' objects in that server, as does a stacking
job with its objects; `faasgd down` leaves no process behind (runtime_up checks every pid of the state file, the
S3 server's included). A runtime killed with SIGKILL leaves its S3 server to the next `faasgd up`, which adopts
it with its objects, as it adopts the stores. A stack that asks for no S3 gets no server until a function
deployed later asks."""

from __future__ import annotations

import json
import os
import signal

import boto3
import psutil
import pytest
from support.hostile_runtime import faasgd, runtime_up
from support.paths import ROOT

from faasgd.local.services import s3
from faasgd.testing.stacks import stack_copy

pytestmark = pytest.mark.e2e
JOB = ["--algorithm", "grad_avg", "--model", "lr", "--dataset", "higgs-like", "--train-samples", "300",
       "--validation-samples", "60", "--test-samples", "100", "--batch-size", "32", "--workers", "2",
       "--max-epochs", "2", "--target-accuracy", "1.0", "--learning-rate", "0.5", "--profile-hz", "0"]


def channel_s3(stack: dict) -> None:
    """What a user edits: the training functions' default channel, and the stacking functions' transfer, s3."""
    for name, spec in stack["functions"].items():
        spec["environment"]["transfer" if name.startswith("stacking-") else "channel"] = "s3"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("local-s3")
    stack = stack_copy(ROOT, tmp / "stack", edit=channel_s3)
    with runtime_up(tmp / ".faasgd", stack, "--ack-wait", "120") as up:
        yield up


def bucket_client(url: str):
    return boto3.session.Session().client("s3", endpoint_url=url, region_name="us-east-1",
                                          aws_access_key_id="any", aws_secret_access_key="any")


def test_up_starts_the_s3_server_with_its_bucket_and_secrets(runtime):
    server = runtime.state["stores"]["s3"]
    assert server["url"].startswith("http://127.0.0.1:")
    assert f"s3         {server['url']}  (pid {server['pid']})" in runtime.up_output.stdout
    names = [b["Name"] for b in bucket_client(server["url"]).list_buckets()["Buckets"]]
    assert names == ["faasgd-local"]
    secrets = runtime.dir / "secrets"
    assert all((secrets / name).stat().st_mode & 0o077 == 0 for name in s3.KEY_SECRETS)
    assert runtime.state["services"]["minio.openfaas-fn:9000"] == server["url"].removeprefix("http://")


def test_a_grad_avg_job_on_channel_s3_ends_done_through_the_runtimes_server(runtime):
    run = faasgd("train", *JOB, "--channel", "s3", "--json", "--dir", runtime.dir, "--port", runtime.port,
                 timeout=240)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    record = json.loads(run.stdout)  # the job's result record
    assert record["state"] == "done", record["error"]
    assert record["rounds"] == 8 and record["round_bytes_written"] > 0 and record["round_bytes_read"] > 0  # 4 a epoch
    client = bucket_client(runtime.state["stores"]["s3"]["url"])
    job_id = record["job_id"]
    written = client.list_objects_v2(Bucket="faasgd-local", Prefix=f"{job_id}/").get("KeyCount", 0)
    assert written > 0, f"no object of job {job_id} in the runtime's S3 server"


def test_a_stacking_job_moves_its_objects_through_the_runtimes_server(runtime):
    answer = runtime.gateway.invoke("stacking-driver", {"trainers_num": 2, "models": ["Lasso", "LinearSVR"]})
    assert answer.status == 200, answer.body[:500]
    job_id = answer.json()["job_id"]
    listed = bucket_client(runtime.state["stores"]["s3"]["url"]).list_objects_v2(Bucket="faasgd-local",
                                                                                 Prefix=f"{job_id}/")
    assert listed.get("KeyCount", 0) == 2 * 2 + 4  # model:i and pred:i per trainer; dataset, models, meta, full


def test_up_after_a_crash_adopts_the_s3_server_with_its_objects_and_down_stops_it(runtime):
    first = json.loads((runtime.dir / "state.json").read_text())
    server = first["stores"]["s3"]
    objects = bucket_client(server["url"]).list_objects_v2(Bucket="faasgd-local").get("KeyCount", 0)
    os.kill(first["pid"], signal.SIGKILL)
    again = faasgd("up", "--port", runtime.port, "--dir", runtime.dir, "-f", first["stack"], "--ack-wait", "120")
    assert again.returncode == 0 and "started" in again.stdout, again.stdout + again.stderr
    second = json.loads((runtime.dir / "state.json").read_text())
    assert second["stores"]["s3"] == server  # the very process, kept
    assert bucket_client(server["url"]).list_objects_v2(Bucket="faasgd-local").get("KeyCount", 0) == objects > 0
    assert faasgd("down", "--dir", runtime.dir).returncode == 0
    pids = [second["pid"], server["pid"], *(r["pid"] for r in second["replicas"])]
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def test_a_stack_not_asking_gets_no_server_until_a_deploy_asks(tmp_path):
    """The repository's stack asks for no S3: no server, no S3 secret. A function deployed later with channel s3
    (as `faas-cli deploy` sends it) starts the server, and its replica's environment reaches it."""
    with runtime_up(tmp_path / ".faasgd") as up:
        assert "s3" not in up.state["stores"] and not list((up.dir / "secrets").glob("s3-*"))
        train = up.gateway.function_status("emnist-train")
        deployment = {"service": "train-s3", "image": train["image"], "envProcess": train["envProcess"],
                      "envVars": {**train["envVars"], "channel": "s3"}, "secrets": train["secrets"],
                      "labels": {"com.openfaas.scale.min": "1", "com.openfaas.scale.max": "1"}}
        answer = up.gateway.request("POST", "/system/functions", json.dumps(deployment).encode(),
                                    {"Content-Type": "application/json"})
        assert answer.status in (200, 202), answer.body
        up.gateway.wait_for_replicas("train-s3", 1, 60)
        state = json.loads((up.dir / "state.json").read_text())
        server = state["stores"]["s3"]
        replica = next(r for r in state["replicas"] if r["function"] == "train-s3")
        env = psutil.Process(replica["pid"]).environ()
        assert env["s3_endpoint_url"] == server["url"] and env["s3_url"] == s3.DEFAULT_URL
        assert "s3_url" not in up.gateway.function_status("train-s3")["envVars"]  # the function as deployed
        up.state = state  # runtime_up's down then checks the S3 server is gone too
