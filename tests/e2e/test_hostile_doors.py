"""The doors of a real `faasgd up` (one per module) as a hostile caller meets them: the functions through the
gateway with the runtime's real redis-server and memcached counted after every case (no key may appear:
nothing in this module is allowed to make a job), the store_url case against a live listener that must
receive no connection at all, and the real `faasgd` and `./test.sh` commands refusing bad flags and
matrices. After every case each process of the runtime is alive and no replica was restarted.
"""

import json
import socket
import subprocess
import time

import pytest

from support.asgi_server import serve
from support.fake_replicas import CallbackRecorder
from support.hostile_runtime import ROOT, faasgd, runtime_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120), pytest.mark.usefixtures("nothing_written_nothing_died")]
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with runtime_up(tmp_path_factory.mktemp("hostile-doors") / ".faasgd") as runtime:
        yield runtime


# (function, method, body, headers, query, status, field)
CALLS = {
    "setup null": ("emnist-setup", "POST", b"null", JSON, None, 400, "body"),
    "setup a list": ("emnist-setup", "POST", b"[]", JSON, None, 400, "body"),
    "setup store_url": ("emnist-setup", "POST", b'{"store_url": "redis://10.0.0.1:6379/0"}', JSON, None, 400, "store_url"),
    "setup store a URL": ("emnist-setup", "POST", b'{"store": "redis://10.0.0.1:6379/0"}', JSON, None, 400, "store"),
    "setup store a form": ("emnist-setup", "POST", b"store_url=redis://10.0.0.1:6379/0", FORM, None, 400, "store_url"),
    "setup a key twice": ("emnist-setup", "POST", b'{"number_of_workers": 9, "number_of_workers": 1}', JSON, None,
                          400, "number_of_workers"),
    "setup more workers than rows": ("emnist-setup", "POST", json.dumps({"dataset": "synthetic", "train_samples": 10,
                                     "number_of_workers": 11}).encode(), JSON, None, 400, "number_of_workers"),
    "setup past memory_limit": ("emnist-setup", "POST", b'{"hidden_sizes": "8000,8000"}', JSON, None, 413,
                                "hidden_sizes"),
    "setup unknown key": ("emnist-setup", "POST", b'{"weights": [1, 2]}', JSON, None, 400, "weights"),
    "setup renamed mode": ("emnist-setup", "POST", b'{"mode": "single"}', JSON, None, 400, "mode"),
    "setup 10^30 workers": ("emnist-setup", "POST", b'{"number_of_workers": 1e30}', JSON, None, 400, "number_of_workers"),
    "setup unicode dataset": ("emnist-setup", "POST", '{"dataset": "ｆａｓｈｉｏｎ-mnist"}'.encode(), JSON, None, 400,
                              "dataset"),
    "setup an XML body": ("emnist-setup", "POST", b"<a/>", {"Content-Type": "application/xml"}, None, 415,
                          "Content-Type"),
    "setup an ftp callback": ("emnist-setup", "POST", b"{}", {**JSON, "X-Callback-Url": "ftp://10.0.0.1/"}, None, 400,
                              "X-Callback-Url"),
    "setup a 3000-character callback": ("emnist-setup", "POST", b"{}", {**JSON, "X-Callback-Url": "http://h/" + "a" * 3000},
                                        None, 400, "X-Callback-Url"),
    "setup PUT": ("emnist-setup", "PUT", b"{}", JSON, None, 405, "method"),
    "setup OPTIONS": ("emnist-setup", "OPTIONS", b"{}", JSON, None, 405, "method"),
    "status a path": ("emnist-setup", "GET", None, {}, {"job_id": "../../etc"}, 400, "job_id"),
    "status store_url": ("emnist-setup", "GET", None, {}, {"job_id": "j1", "store_url": "redis://10.0.0.1:6379/0"},
                         400, "store_url"),
    "status no such job": ("emnist-setup", "GET", None, {}, {"job_id": "jmissing", "store": "memcached"}, 404, "job_id"),
    "train store_url": ("emnist-train", "POST", b'{"job_id": "j1", "worker_id": 0, "store_url": "redis://10.0.0.1:1/0"}',
                        JSON, None, 400, "store_url"),
    "train no such job": ("emnist-train", "POST", b'{"job_id": "jmissing", "worker_id": 0}', JSON, None, 404, "job_id"),
    "train a worker string": ("emnist-train", "POST", b'{"job_id": "j1", "worker_id": "0"}', JSON, None, 400,
                              "worker_id"),
    "train GET": ("emnist-train", "GET", b"", {}, None, 405, "method"),
    "train nested": ("emnist-train", "POST", b"[" * 50_000 + b"]" * 50_000, JSON, None, 400, "body"),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_a_hostile_call_through_the_gateway_is_refused_naming_its_field(runtime, case):
    function, method, body, headers, query, status, field = CALLS[case]
    answer = runtime.gateway.invoke(function, body, method=method, headers=headers, query=query)
    assert answer.status == status, answer.body[:300]
    if method != "HEAD":
        error = answer.json()
        assert error["field"] == field and error["error"].startswith(f"{field}: "), error


def test_an_async_hostile_call_answers_its_refusal_to_the_callback(runtime):
    callback = CallbackRecorder()
    with serve(callback) as url:
        runtime.gateway.invoke_async("emnist-setup", b'{"store_url": "redis://10.0.0.1:6379/0"}', url + "/done", JSON)
        deadline = time.monotonic() + 30
        while not callback.received and time.monotonic() < deadline:
            time.sleep(0.05)
    headers, body = callback.received[0]
    assert headers["x-function-status"] == "400" and json.loads(body)["field"] == "store_url"


def test_a_store_location_in_any_request_never_reaches_the_listener_there(runtime):
    """A socket listens on 127.0.0.1 (a free port); every request naming it as a store, in every field and
    form, is a 400 naming the field, and the listener is never connected to, not even once."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    here = {"redis": f"redis://127.0.0.1:{port}/0", "secret": f"redis://:pw@127.0.0.1:{port}/0",
            "memcached": f"memcached://127.0.0.1:{port}"}
    refused = [
        ("emnist-setup", {"store_url": here["redis"]}, None, "store_url"),
        ("emnist-setup", {"store_url": here["secret"]}, None, "store_url"),
        ("emnist-setup", {"store_url": here["memcached"]}, None, "store_url"),
        ("emnist-setup", {"local_store_url": here["memcached"], "store_topology": "node-local"}, None, "local_store_url"),
        ("emnist-setup", {"store": f"127.0.0.1:{port}"}, None, "store"),
        ("emnist-setup", f"store_url={here['redis']}".encode(), FORM, "store_url"),
        ("emnist-train", {"job_id": "j1", "worker_id": 0, "store_url": here["redis"]}, None, "store_url"),
        ("emnist-train", {"job_id": "j1", "worker_id": 0, "local_store_url": here["memcached"]}, None, "local_store_url"),
        ("emnist-train", {"job_id": "j1", "worker_id": 0, "store": here["redis"]}, None, "store"),
    ]
    try:
        for function, body, headers, field in refused:
            answer = runtime.gateway.invoke(function, body, headers=headers)
            assert answer.status == 400 and answer.json()["field"] == field, (function, body, answer.body[:300])
        for query, field in (({"job_id": "j1", "store_url": here["redis"]}, "store_url"),
                             ({"job_id": "j1", "store": here["redis"]}, "store"),
                             ({"job_id": "j1", "local_store_url": here["memcached"]}, "local_store_url")):
            answer = runtime.gateway.invoke("emnist-setup", method="GET", query=query)
            assert answer.status == 400 and answer.json()["field"] == field, answer.body[:300]
        callback = CallbackRecorder()  # and queued: the train function refuses it when the queue delivers it
        with serve(callback) as url:
            runtime.gateway.invoke_async("emnist-train", {"job_id": "j1", "worker_id": 0, "store_url": here["redis"]},
                                         url + "/done")
            deadline = time.monotonic() + 30
            while not callback.received and time.monotonic() < deadline:
                time.sleep(0.05)
        assert callback.received and callback.received[0][0]["x-function-status"] == "400"
        listener.settimeout(1.0)
        with pytest.raises(socket.timeout):
            connection, peer = listener.accept()
            connection.close()
            pytest.fail(f"the listener named in a request was connected to from {peer}")
    finally:
        listener.close()


# The real commands against this runtime's folder: (argv, field); exit 2 in one line, nothing changed
COMMANDS = {
    "scale -1": (["scale", "emnist-train", "--replicas", "-1"], "--replicas"),
    "scale a path": (["scale", "../system/functions", "--replicas", "3"], "name"),
    "invoke a path": (["invoke", "../system/functions", "--method", "DELETE"], "name"),
    "invoke TRACE": (["invoke", "emnist-setup", "--method", "TRACE"], "--method"),
    "up a bad port": (["up", "--port", "70000"], "--port"),
    "train a bad value": (["train", "--n-push", "0", "--store", "memcached"], "n_push"),
    "train a store location": (["train", "--store-url", "redis://127.0.0.1:6379/0"], "store_url"),
    "status a path": (["status", "../../etc"], "job_id"),
    "logs a path": (["logs", "../secrets/basic-auth"], "name"),
}


@pytest.mark.parametrize("case", list(COMMANDS))
def test_the_real_command_refuses_a_bad_flag_in_one_line(runtime, case):
    argv, field = COMMANDS[case]
    run = faasgd(*argv, "--dir", runtime.dir, stdin="{}")
    assert run.returncode == 2 and run.stdout == "", run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and field in run.stderr and "Traceback" not in run.stderr, run.stderr


MATRICES = {
    "a store URL for a name": ("name: hostile\nmatrix: {store: ['redis://:pw@127.0.0.1:6379/0']}\n", "store"),
    "a name that climbs": ("name: ../../evil\nfixed: {dataset: synthetic}\n", "name"),
    "a python tag": ("!!python/object/apply:os.system ['touch pwned']\n", "matrix"),
}


@pytest.mark.parametrize("case", list(MATRICES))
def test_the_real_test_sh_refuses_a_bad_matrix_and_writes_nothing(runtime, tmp_path, case):
    text, field = MATRICES[case]
    (tmp_path / "m.yml").write_text(text)
    results = sorted((ROOT / "results").iterdir()) if (ROOT / "results").exists() else []
    run = subprocess.run(["./test.sh", str(tmp_path / "m.yml"), "--dir", str(runtime.dir), "--port", str(runtime.port)],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and run.stdout == "" and run.stderr.startswith(f"test.sh: error: {field}: ")
    assert run.stderr.count("\n") == 1 and "pw@" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yml"]
    assert (sorted((ROOT / "results").iterdir()) if (ROOT / "results").exists() else []) == results
