"""/system/logs (NDJSON, tail, since, follow) and basic auth on /system, in-process (support.fake_pods);
log files in a temporary folder, time on a FakeClock."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest

from faasgd.local.replicas.logs import LogFile, split_line, stamp, write_line
from support.fake_pods import LOGIN, system_gateway
from support.local_gateway import within

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
NOW = datetime.now(timezone.utc)


def texts(response) -> list[str]:
    return [json.loads(line)["text"] for line in response.text.splitlines()]


async def test_logs_are_ndjson_messages_with_tail_per_replica_and_since(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, pods):
        a, b = pods.running("emnist-train")
        start = NOW - timedelta(minutes=10)
        for i in range(3):
            write_line(a.log_path, f"a{i}", start + timedelta(seconds=2 * i))
        for i in range(2):
            write_line(b.log_path, f"b{i}", start + timedelta(seconds=2 * i + 1))
        tailed = await gw.client.get("/system/logs", params={"name": "emnist-train", "tail": "2", "follow": "false"})
        since = await gw.client.get("/system/logs", params={"name": "emnist-train.openfaas-fn",
                                                             "since": stamp(start + timedelta(seconds=2))})
        write_line(a.log_path, "recent")
        default = await gw.client.get("/system/logs", params={"name": "emnist-train"})
    assert tailed.status_code == 200 and tailed.headers["content-type"] == "application/x-ndjson"
    assert texts(tailed) == ["b0", "a1", "b1", "a2"]  # the last two of each replica, in time order
    first = json.loads(tailed.text.splitlines()[0])
    assert first == {"name": "emnist-train", "namespace": "openfaas-fn", "instance": b.name,
                     "timestamp": stamp(start + timedelta(seconds=1)), "text": "b0"}
    assert texts(since) == ["a1", "b1", "a2"]
    assert texts(default) == ["recent"]  # neither tail nor since: the last 5 minutes, as faas-netes


async def test_follow_streams_new_lines_and_new_replicas_until_the_timeout(tmp_path):
    async with system_gateway(tmp_path, upstream_timeout_s=1.0) as (gw, supervisor, pods):
        first = pods.running("emnist-setup")[0]
        write_line(first.log_path, "before")
        call = asyncio.create_task(gw.client.get("/system/logs", params={"name": "emnist-setup", "follow": "1"}))
        await within(gw.clock.sleeping(0.25))
        write_line(first.log_path, "during")
        supervisor.scale("emnist-setup", 2)
        write_line(pods.running("emnist-setup")[1].log_path, "from the new replica")
        await gw.clock.advance(0.25)
        await within(gw.clock.sleeping(0.25))
        await gw.clock.advance(1.0)
        response = await within(call)
    assert texts(response) == ["before", "during", "from the new replica"]


async def test_bad_log_requests(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, _):
        answers = {query: await gw.client.get("/system/logs", params=query) for query in (
            (("name", "nope"),), (("name", "emnist-train"), ("tail", "x")),
            (("name", "emnist-train"), ("since", "yesterday")), ())}
    assert [a.status_code for a in answers.values()] == [404, 422, 422, 400]


def test_a_log_file_reads_whole_lines_once_and_unstamped_lines_take_the_time_before(tmp_path):
    path = tmp_path / "r.log"
    write_line(path, "one", NOW)
    with open(path, "a") as f:
        f.write("a traceback line\npartial")
    log = LogFile("r-1", path)
    entries = log.read()
    assert [(e.text, e.time) for e in entries] == [("one", NOW), ("a traceback line", NOW)]
    with open(path, "a") as f:
        f.write(" line\n")
    assert [e.text for e in log.read()] == ["partial line"] and log.read() == []
    assert split_line("no stamp here") == (None, "no stamp here")


PROTECTED = [("GET", "/system/functions"), ("POST", "/system/functions"), ("DELETE", "/system/functions"),
             ("GET", "/system/function/emnist-train"), ("POST", "/system/scale-function/emnist-train"),
             ("GET", "/system/info"), ("GET", "/system/namespaces"), ("GET", "/system/secrets"),
             ("GET", "/system/logs?name=emnist-train"), ("GET", "/system/no-such-route")]


async def test_system_routes_need_the_login_and_function_routes_stay_open(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, _):
        gw.client.auth = None
        refused = [await gw.client.request(method, path) for method, path in PROTECTED]
        wrong = [await gw.client.get("/system/functions", auth=login) for login in
                 (("admin", "wrong"), ("root", LOGIN[1]), ("admin", LOGIN[1] + "x"))]
        garbled = await gw.client.get("/system/functions", headers={"Authorization": "Basic !!notbase64"})
        right = await gw.client.get("/system/functions", auth=LOGIN)
        open_ = [await gw.client.post("/function/emnist-train", content=b"x"), await gw.client.get("/healthz"),
                 await gw.client.get("/metrics"), await gw.client.post("/async-function/emnist-setup", content=b"{}")]
    for response in refused + wrong + [garbled]:
        assert response.status_code == 401 and response.json() == {"error": "invalid credentials"}
        assert response.headers["www-authenticate"] == 'Basic realm="Restricted"'
    assert right.status_code == 200
    assert [r.status_code for r in open_] == [200, 200, 200, 202]
