"""The local OpenFaaS-compatible runtime end to end: `faasgd up`, real stores, nats-server, replicas, gateway,
`faasgd down`. Every runtime here delivers as OpenFaaS Community Edition (the default): no retry of a
failed call, so a job survives a killed replica only through faasgd's own supervision."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from faasgd.local.lifecycle import credentials
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient
from faasgd.openfaas import wait_for_job
from faasgd.store import open_store
from faasgd.testing import stacks
from support.asgi_server import serve
from support.fake_replicas import CallbackRecorder
from support.paths import ROOT

pytestmark = pytest.mark.e2e
SMALL = {"dataset": "synthetic", "train_samples": 4000, "test_samples": 500, "hidden_sizes": [32]}


def faasgd(*args, timeout=300, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, input=stdin, env=env)


def Gateway(state, timeout_s=30):
    """A client of the runtime's gateway with its login (read from its secrets folder)."""
    return GatewayClient(state["gateway_url"], timeout_s, auth=credentials.read(Path(state["dir"]) / "secrets"))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[-1][:1] != "Z"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    directory = tmp_path_factory.mktemp("runtime") / ".faasgd"
    port = free_port()
    started = faasgd("up", "--port", str(port), "--dir", str(directory), "--ack-wait", "120", "--wait",
                     env={**os.environ, "SHELL_ONLY_SETTING": "must not reach a replica"})
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((directory / "state.json").read_text())
    yield {"dir": str(directory), "port": port, "state": state, "gateway": Gateway(state)}
    pids = [state["pid"], state["broker"]["pid"]] + [s["pid"] for s in state["stores"].values()]
    current = json.loads((directory / "state.json").read_text()) if (directory / "state.json").exists() else state
    pids += [r["pid"] for r in current["replicas"]] + [r["pid"] for r in state["replicas"]]
    stopped = faasgd("down", "--dir", str(directory))
    assert stopped.returncode == 0, stopped.stderr
    assert not [pid for pid in set(pids) if alive(pid)], "faasgd down left processes behind"
    assert not (directory / "state.json").exists()


def start_job(runtime, **overrides):
    answer = runtime["gateway"].invoke("emnist-setup", overrides)
    assert answer.status == 202, answer.body
    return answer.json()["status_query"]


def wait_for(runtime, query, timeout_s=240):
    status = wait_for_job(lambda: runtime["gateway"].job_status(query), timeout_s, poll_s=0.3)
    assert status["state"] != "running", f"job {query} still running after {timeout_s}s"
    return status


def test_up_is_idempotent_and_reports_the_running_runtime(runtime):
    again = faasgd("up", "--port", str(runtime["port"]), "--dir", runtime["dir"])
    assert again.returncode == 0 and "already running" in again.stdout
    broker = runtime["state"]["broker"]
    assert f"queue      {broker['url']}  (pid {broker['pid']}, ce delivery)" in again.stdout
    assert runtime["state"]["delivery"]["mode"] == "ce" and alive(broker["pid"])
    assert broker["store_dir"] == str(Path(runtime["dir"]) / "jetstream")
    functions = runtime["gateway"].request("GET", "/system/functions").json()
    by_name = {f["name"]: f for f in functions}
    assert by_name["emnist-train"]["availableReplicas"] == by_name["emnist-train"]["replicas"] == 2
    assert runtime["gateway"].request("GET", "/healthz").status == 200


def test_every_server_the_runtime_started_listens_on_loopback_only(runtime):
    state = json.loads((Path(runtime["dir"]) / "state.json").read_text())
    pids = [state["pid"]] + [s["pid"] for s in state["stores"].values()] + [r["pid"] for r in state["replicas"]]
    processes = {p for pid in pids for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]}
    listening = [(p.name(), c.laddr) for p in processes for c in p.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 1 + 2 + len(state["replicas"])  # gateway, stores, each replica
    assert all(address.ip == "127.0.0.1" for _, address in listening), listening


def test_system_routes_need_the_login_and_the_login_is_private(runtime):
    anonymous = GatewayClient(runtime["state"]["gateway_url"], 10)
    assert anonymous.request("GET", "/system/functions").status == 401
    assert anonymous.request("GET", "/healthz").status == 200
    secrets = Path(runtime["dir"]) / "secrets"
    assert oct((secrets / "basic-auth-password").stat().st_mode & 0o777) == "0o600"
    replica_env = psutil.Process(runtime["state"]["replicas"][0]["pid"]).environ()
    mounted = Path(replica_env["FAASGD_SECRETS_DIR"])
    assert mounted.parent.name == runtime["state"]["replicas"][0]["name"] and not (mounted / "basic-auth-password").exists()
    assert replica_env["mode"] == "http" and "SHELL_ONLY_SETTING" not in replica_env


def test_unknown_function_is_404_json(runtime):
    answer = runtime["gateway"].invoke("no-such-function", {})
    assert answer.status == 404 and "error" in answer.json()


def test_bad_body_to_setup_is_400_naming_the_field(runtime):
    answer = runtime["gateway"].invoke("emnist-setup", {"batch_size": 0})
    assert answer.status == 400
    assert answer.json()["field"] == "batch_size" and "batch_size" in answer.json()["error"]
    answer = runtime["gateway"].invoke("emnist-setup", b"{oops", headers={"Content-Type": "application/json"})
    assert answer.status == 400 and answer.json()["field"] == "body"
    cli = faasgd("invoke", "emnist-setup", "--dir", runtime["dir"], stdin='{"nope": 1}')
    assert cli.returncode == 1 and "nope" in cli.stdout


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
@pytest.mark.parametrize("store", ["redis", "memcached"])
def test_fashion_mnist_job_reaches_085(runtime, store, mode):
    query = start_job(runtime, store=store, invocation_mode=mode, number_of_workers=2, target_accuracy=0.85)
    assert query["store"] == store  # named, never located: the functions resolve it to their own store
    status = wait_for(runtime, query)
    result = status["result"]
    assert status["state"] == "done", result
    assert result["reached_target"] and result["final_validation_accuracy"] >= 0.85
    assert result["time_to_target_s"] > 0 and result["pushes"] > 0


def test_async_call_posts_its_result_to_the_callback_url(runtime):
    callback = CallbackRecorder()
    with serve(callback) as url:
        call_id = runtime["gateway"].invoke_async("emnist-setup", {**SMALL, "invocation_mode": "single", "max_epochs": 1},
                                                  url + "/done")
        deadline = time.monotonic() + 60
        while not callback.received and time.monotonic() < deadline:
            time.sleep(0.1)
    headers, body = callback.received[0]
    assert headers["x-call-id"] == call_id
    assert headers["x-function-status"] == "200"
    assert float(headers["x-duration-seconds"]) > 0
    assert json.loads(body)["result"]["state"] == "done"


def test_scaling_emnist_train_to_3_replicas_during_a_job(runtime):
    query = start_job(runtime, **SMALL, number_of_workers=3, max_epochs=25, target_accuracy=1.0)
    scaled = faasgd("scale", "emnist-train", "--replicas", "3", "--dir", runtime["dir"])
    assert scaled.returncode == 0, scaled.stderr
    function = runtime["gateway"].request("GET", "/system/function/emnist-train").json()
    assert function["replicas"] == function["availableReplicas"] == 3
    status = wait_for(runtime, query)
    assert status["state"] == "done"
    assert [w["epoch"] for w in status["workers"]] == [25, 25, 25]
    too_many = faasgd("scale", "emnist-train", "--replicas", "6", "--dir", runtime["dir"], timeout=120)
    assert too_many.returncode == 0 and "emnist-train: 5 replica(s) (asked for 6; clamped" in too_many.stdout
    assert faasgd("scale", "emnist-train", "--replicas", "2", "--dir", runtime["dir"]).returncode == 0


def test_killing_a_replica_mid_job_in_per_iteration_mode(runtime):
    query = start_job(runtime, **SMALL, invocation_mode="per-iteration", number_of_workers=2, max_epochs=30,
                      target_accuracy=1.0, lease_s=2)
    gateway = runtime["gateway"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = gateway.invoke("emnist-setup", method="GET", query=query).json()
        if all(w and w["epoch"] >= 3 for w in status["workers"]):
            break
        time.sleep(0.1)
    victim = gateway.request("GET", "/system/function/emnist-train").json()["pids"][0]
    os.kill(victim, signal.SIGKILL)
    status = wait_for(runtime, query)
    assert status["state"] == "done", status["result"]
    assert [w["epoch"] for w in status["workers"]] == [30, 30]
    after = gateway.request("GET", "/system/function/emnist-train").json()
    assert victim not in after["pids"] and after["restarts"] >= 1


def test_logs_show_the_replicas_output_and_each_workers_training(runtime):
    status = wait_for(runtime, start_job(runtime, **SMALL, number_of_workers=2, max_epochs=2, target_accuracy=1.0))
    logs = faasgd("logs", "emnist-train", "--dir", runtime["dir"])
    assert logs.returncode == 0 and "emnist-train-" in logs.stdout
    job_id = status["job_id"]
    for worker in (0, 1):
        mine = [line for line in logs.stdout.splitlines() if f"job {job_id} worker {worker}:" in line]
        assert any("training on 1800 rows" in line for line in mine), logs.stdout[-2000:]  # 400 held out to validate
        assert any("epoch 2, validation accuracy" in line for line in mine)
        assert any("finished after 3600 samples" in line for line in mine)


def test_cli_invoke_async_and_status(runtime):
    body = json.dumps({**SMALL, "max_epochs": 2, "target_accuracy": 1.0})
    queued = faasgd("invoke", "emnist-setup", "--async", "--dir", runtime["dir"], stdin=body)
    assert queued.returncode == 0 and "Function submitted asynchronously" in queued.stdout
    sync = faasgd("invoke", "emnist-setup", "--dir", runtime["dir"], stdin=body)
    assert sync.returncode == 0
    job_id = json.loads(sync.stdout)["job_id"]
    watched = faasgd("status", job_id, "--watch", "--dir", runtime["dir"], "--timeout", "120")
    assert watched.returncode == 0 and f"job {job_id}: done" in watched.stdout
    as_json = json.loads(faasgd("status", job_id, "--json", "--dir", runtime["dir"]).stdout)
    assert as_json["state"] == "done" and as_json["result"]["samples"] == 2 * 3600  # 400 rows held out to validate
    functions = faasgd("status", "--dir", runtime["dir"])
    assert functions.returncode == 0 and "emnist-train" in functions.stdout


def test_the_jobs_model_leaves_through_the_gateway_with_the_accuracy_it_reports(runtime, tmp_path):
    status = wait_for(runtime, start_job(runtime, **SMALL, number_of_workers=2, max_epochs=6, target_accuracy=0.8))
    result, out = status["result"], tmp_path / "model.npz"
    assert status["state"] == "done" and result["reached_target"], result
    saved = faasgd("model", status["job_id"], "-o", str(out), "--dir", runtime["dir"])
    assert saved.returncode == 0, saved.stderr
    evaluated = faasgd("evaluate", str(out), "--json")
    answer = json.loads(evaluated.stdout)
    assert answer["test_accuracy"] == answer["reported_test_accuracy"] == result["final_test_accuracy"]
    assert answer["validation_accuracy"] == result["final_validation_accuracy"] >= 0.8
    missing = faasgd("model", "jnosuchjob", "-o", str(out), "--dir", runtime["dir"])
    assert missing.returncode == 1 and "no job 'jnosuchjob'" in missing.stderr


def test_train_starts_and_stops_its_own_runtime(tmp_path):
    directory = tmp_path / ".faasgd"
    run = faasgd("train", "--port", str(free_port()), "--dir", str(directory), "--workers", "2",
                 "--dataset", "synthetic", "--train-samples", "4000", "--test-samples", "500", "--max-epochs", "3",
                 "--target-accuracy", "1.0", "--store", "memcached", "--json")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["state"] == "done" and result["samples"] == 3 * 3600
    assert "memcached://127.0.0.1:" in run.stderr  # --store memcached picked the runtime's memcached (the header)
    assert not (directory / "state.json").exists()  # it stopped the runtime it started


def test_train_with_bad_input_starts_nothing(tmp_path):
    directory = tmp_path / ".faasgd"
    run = faasgd("train", "--dir", str(directory), "--n-push", "0")
    assert run.returncode == 2 and run.stderr.startswith("faasgd: error: n_push: ")
    assert not directory.exists()


def test_conflicts_are_counted_per_worker_when_workers_share_a_replica(tmp_path):
    """3 workers on 2 replicas (3 queue workers, so two workers train in one replica process and share
    its store client): each worker reports the races its own pushes lost, and they add up to the
    store's own count of the job's conflicts."""
    directory = tmp_path / ".faasgd"
    started = faasgd("up", "--port", str(free_port()), "--dir", str(directory), "--queue-workers", "3",
                     "-f", stacks.stack_copy(ROOT, tmp_path / "stack"))
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        state = json.loads((directory / "state.json").read_text())
        runtime = {"gateway": Gateway(state)}
        query = start_job(runtime, **SMALL, number_of_workers=3, n_fetch=1, n_push=1, max_epochs=4,
                          target_accuracy=1.0)
        status = wait_for(runtime, query)
        assert status["state"] == "done", status["result"]
        replicas = [tuple(w["replicas"]) for w in status["workers"]]
        assert len(set(replicas)) == 2 and all(len(r) == 1 for r in replicas)  # two workers shared a replica
        store = open_store(state["stores"]["redis"]["url"])
        per_worker = [w["conflicts"] for w in status["workers"]]
        assert sum(per_worker) == status["result"]["conflicts"] == store.read_counter(query["job_id"], "conflicts")
        assert sum(per_worker) > 0  # they really raced
        assert status["result"]["pushes"] == store.get_weights(query["job_id"])[1]
    finally:
        assert faasgd("down", "--dir", str(directory)).returncode == 0


def test_kill_9_of_the_runtime_mid_queue_then_up_delivers_the_queued_calls(tmp_path):
    """Community Edition delivery, one queue worker: one call in flight and two queued when the daemon
    is killed; `faasgd up` stops the replicas it left, keeps its stores and nats-server (the same
    processes, their data intact), and delivers all three."""
    directory, port, stack = tmp_path / ".faasgd", free_port(), stacks.stack_copy(ROOT, tmp_path / "stack")
    started = faasgd("up", "--port", str(port), "--dir", str(directory), "--queue-workers", "1", "-f", stack)
    assert started.returncode == 0, started.stdout + started.stderr
    first = json.loads((directory / "state.json").read_text())
    gateway = Gateway(first)
    body = {**SMALL, "invocation_mode": "single", "max_epochs": 3}
    callback = CallbackRecorder()
    try:
        with serve(callback) as url:
            ids = {gateway.invoke_async("emnist-setup", body, url + "/done") for _ in range(3)}
            deadline = time.monotonic() + 30
            while 'gateway_function_invocation_started{function_name="emnist-setup"} 1.0' not in \
                    gateway.request("GET", "/metrics").body.decode():
                assert time.monotonic() < deadline, "no call went in flight"
                time.sleep(0.05)
            os.kill(first["pid"], signal.SIGKILL)
            again = faasgd("up", "--port", str(port), "--dir", str(directory), "--queue-workers", "1", "-f", stack)
            assert again.returncode == 0 and "started" in again.stdout, again.stdout + again.stderr
            deadline = time.monotonic() + 120
            while {h["x-call-id"] for h, _ in callback.received} != ids:
                assert time.monotonic() < deadline, f"calls not delivered after the restart: {callback.received}"
                time.sleep(0.2)
        assert {h["x-function-status"] for h, _ in callback.received} == {"200"}
        assert all(json.loads(b)["result"]["state"] == "done" for _, b in callback.received)
        second = json.loads((directory / "state.json").read_text())
        assert second["broker"] == first["broker"] and second["stores"] == first["stores"]  # kept, as they were
        assert not [r["pid"] for r in first["replicas"] if alive(r["pid"])], "up left the killed runtime's replicas"
    finally:
        assert faasgd("down", "--dir", str(directory)).returncode == 0
    assert not [pid for pid in [second["pid"], second["broker"]["pid"], *(s["pid"] for s in second["stores"].values())]
                if alive(pid)]
