"""HTTP hygiene at every server a `faasgd up` runs that speaks HTTP: the gateway (uvicorn on h11) and a
function replica (the template's index.py on waitress; when `faasgd up` found of-watchdog, the watchdog in
front of it, whose Go server answers what it cannot parse with its own plain 400 and a body cut short with
its empty 504 or 500), reached over real sockets with bytes no client library would send. Each table row gets its status as JSON, or, for a body cut off by a client that left,
no answer at all (both servers close on the client's end of stream; the gateway's in-process 400 for it is
in tests/unit/local/test_hostile_gateway_routes.py). After every row no key was written to either store and every
process of the runtime is alive with its replicas never restarted. Last, `ss -ltn` shows the runtime
listening on 127.0.0.1 only.
"""

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from support.hostile_runtime import raw, request, runtime_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120), pytest.mark.usefixtures("nothing_written_nothing_died")]
SETUP = "emnist-setup"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with runtime_up(tmp_path_factory.mktemp("hostile-http") / ".faasgd") as runtime:
        assert runtime.keys() == 0
        yield runtime


def watched(runtime) -> bool:
    """Replicas run under the real of-watchdog (faasgd up found fwatchdog): a replica's port is the watchdog's."""
    return bool((runtime.state.get("watchdog") or {}).get("path"))


def servers(runtime):
    """(name, port, path of emnist-setup there): the gateway and the emnist-setup replica itself."""
    return {"gateway": (runtime.port, f"/function/{SETUP}"), "replica": (runtime.replica_port(SETUP), "/")}


SERVERS = ["gateway", "replica"]
MALFORMED = {  # requests h11 and waitress cannot parse
    "a bare LF in a header": b"POST {path} HTTP/1.1\r\nHost: x\r\nX-A: a\nb\r\nContent-Length: 2\r\n\r\n{{}}",
    "a CR in a header value": b"POST {path} HTTP/1.1\r\nHost: x\r\nX-Callback-Url: http://h/\rX\r\nContent-Length: 2\r\n\r\n{{}}",
    "a NUL in a header": b"POST {path} HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\n{{}}",
    "a space before the colon": b"POST {path} HTTP/1.1\r\nHost: x\r\nX-A : b\r\nContent-Length: 2\r\n\r\n{{}}",
    "no HTTP version": b"GET\r\n\r\n",
    "a TLS hello": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40 + b"\r\n\r\n",
    "a space in the path": b"POST /a b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}",
    "HTTP/0.9": b"GET {path}\r\n\r\n",
    "two Content-Lengths": b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}",
    "a negative Content-Length": b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    "a bad chunk size": b"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n",
    "Content-Length and chunked": b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_request_the_server_cannot_parse_is_a_json_400_and_does_nothing(runtime, server, case):
    port, path = servers(runtime)[server]
    answer = raw(port, MALFORMED[case].replace(b"{path}", path.encode()).replace(b"{{}}", b"{}"))
    if server == "replica" and watched(runtime) and case == "Content-Length and chunked":
        # of-watchdog's Go server reads both framings as chunked: an empty body, which emnist-setup refuses (a job
        # needs its body), with its own JSON 400
        assert answer.status == 400 and answer.json()["field"] == "body", (answer.status, answer.body[:300])
        return
    if server == "replica" and watched(runtime):  # the replica's port is of-watchdog's: Go's own plain answers
        if case == "a bad chunk size":  # the head parses; the body breaks while the watchdog streams it upstream
            assert (answer.status, answer.headers.get("x-openfaas-internal")) == (500, "of-watchdog"), answer
        else:
            assert answer.status == 400 and answer.body.startswith(b"400 Bad Request"), answer
        return
    assert answer.status == 400, (answer.status, answer.body[:300])
    # waitress reads "GET /" as HTTP/1.0 and hands it on: the function's own 400 (a status query without job_id)
    expected = "job_id: " if (case, server) == ("HTTP/0.9", "replica") else "request: "
    assert answer.json()["error"].startswith(expected)


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "BREW", "PUT", "DELETE", "PATCH"])
def test_a_method_emnist_setup_does_not_serve_is_a_json_405_with_allow(runtime, server, method):
    port, path = servers(runtime)[server]
    answer = raw(port, request(method, path, b'{"number_of_workers": 1}', {"Content-Type": "application/json"}))
    assert answer.status == 405 and answer.headers["allow"], answer.body[:300]
    assert method in answer.json()["error"]


@pytest.mark.parametrize("server", SERVERS)
def test_deeply_nested_json_is_a_400_on_body(runtime, server):
    port, path = servers(runtime)[server]
    answer = raw(port, request("POST", path, b"[" * 100_000 + b"]" * 100_000, {"Content-Type": "application/json"}))
    assert answer.status == 400 and answer.json() == {"error": "body: JSON nested too deeply", "field": "body"}


def test_deeply_nested_json_to_the_gateways_own_api_is_a_400(runtime):
    nested = b'{"a":' * 5000 + b"1" + b"}" * 5000
    answer = runtime.gateway.request("POST", "/system/functions", nested)
    assert answer.status == 400 and "nested too deeply" in answer.json()["error"]


LIMITS = {  # (server, path, bytes sent, status, words)
    "gateway async past 1 MiB": ("gateway", f"/async-function/{SETUP}", (1 << 20) + 1, 413, "at most 1048576"),
    "gateway sync past 32 MiB": ("gateway", f"/function/{SETUP}", (32 << 20) + 1, 413, "at most 33554432"),
    "function past 1 MiB, through the gateway": ("gateway", f"/function/{SETUP}", 2 << 20, 413, "max_request_bytes"),
    "function past 1 MiB, direct": ("replica", "/", (1 << 20) + 1, 413, "max_request_bytes"),
}


@pytest.mark.parametrize("case", list(LIMITS))
def test_a_body_past_a_limit_is_a_json_413(runtime, case):
    server, path, size, status, words = LIMITS[case]
    port = servers(runtime)[server][0]
    answer = raw(port, request("POST", path, b'{"a": "' + b"x" * (size - 9) + b'"}', {"Content-Type": "application/json"}))
    assert answer.status == status and words in answer.json()["error"], answer.body[:300]


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("path", ["", "/async"])
def test_a_body_shorter_than_its_content_length_is_never_acted_on(runtime, server, path):
    """The client sends part of a body that would start a job, then leaves: no job, and no 2xx."""
    port, target = servers(runtime)[server]
    target = f"/async-function/{SETUP}" if path and server == "gateway" else target
    data = request("POST", target, b'{"number_of_workers": 1}', {"Content-Length": "100",
                                                                "Content-Type": "application/json"})
    answer = raw(port, data, half_close=True)
    # of-watchdog answers an upstream request it could not finish with an empty 504 of its own
    cut = (504,) if server == "replica" and watched(runtime) and answer.headers.get("x-openfaas-internal") else ()
    assert answer.status in (0, 400, *cut), (answer.status, answer.body[:300])


@pytest.mark.parametrize("server", SERVERS)
def test_a_burst_of_100_concurrent_requests_is_all_answered(runtime, server):
    port, path = servers(runtime)[server]
    data = request("GET", f"{path}?job_id=jmissing", headers={"Connection": "close"})
    with ThreadPoolExecutor(100) as pool:
        answers = list(pool.map(lambda _: raw(port, data, timeout_s=60), range(100)))
    assert [a.status for a in answers] == [404] * 100
    assert {a.json()["field"] for a in answers} == {"job_id"}


def test_ss_shows_the_runtime_listening_on_loopback_only(runtime):
    listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=30, check=True).stdout
    pids = runtime.pids()  # and their children: under of-watchdog a replica's host port is its forwarder's
    pids |= {child.pid for pid in pids for child in psutil.Process(pid).children(recursive=True)}
    ours = [line for line in listening.splitlines()
            if {int(p) for p in re.findall(r"pid=(\d+)", line)} & pids]
    addresses = [line.split()[3] for line in ours]
    assert len(ours) >= 4 + len(runtime.state["replicas"]), listening  # gateway, redis, memcached, nats, replicas
    assert all(address.startswith("127.0.0.1:") for address in addresses), addresses
    assert f"127.0.0.1:{runtime.port}" in addresses
    assert json.dumps(runtime.state).count("0.0.0.0") == 0
