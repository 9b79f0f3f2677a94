"""Resource profiles against a real redis-server and memcached: the bytes the clients' sockets counted are the
bytes the server says it received and sent (its own statistics), and a job's result carries its profile."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.local.services.stores import start_memcached, start_redis
from faasgd.profile import MEASURES
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import meter, open_store
from faasgd.store.keys import profile_name
from faasgd.store.url import parse_store_url

pytestmark = pytest.mark.integration


def ask(url: str, request: bytes, done: bytes) -> bytes:
    """One raw request to the server on a socket of its own; the whole reply (it ends with `done`)."""
    parsed = parse_store_url(url)
    with socket.create_connection((parsed.host, parsed.port), timeout=5) as sock:
        sock.sendall(request)
        reply = b""
        while not reply.endswith(done):
            reply += sock.recv(65536)
    return reply


REDIS_INFO = b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n"


def redis_stats(url: str) -> tuple[dict, int]:
    reply = ask(url, REDIS_INFO, b"\r\n\r\n")  # a bulk string ending in a blank line ... then \r\n
    text = reply.split(b"\r\n", 1)[1].decode()
    return {k: v for k, _, v in (line.partition(":") for line in text.splitlines()) if v}, len(reply)


def memcached_stats(url: str) -> tuple[dict, int]:
    reply = ask(url, b"stats\r\n", b"END\r\n")
    lines = [line.split() for line in reply.decode().splitlines() if line.startswith("STAT ")]
    return {parts[1]: parts[2] for parts in lines}, len(reply)


def some_traffic(url: str) -> None:
    """A fresh client (its handshake included) writing weights, fetching, pushing and writing records."""
    store = open_store(url, timeout_s=5.0, chunk_floats=4096)
    try:
        job_id = "jmeter" + np.random.default_rng().integers(1 << 30).astype(str)
        store.set_weights(job_id, np.ones(10_000, np.float32))
        store.get_weights(job_id)
        store.push_update(job_id, np.full(10_000, 0.5, np.float32))
        store.put_record(job_id, "r", {"x": 1})
        store.get_record(job_id, "r")
    finally:
        store.close()


@pytest.mark.serial  # memcached adds its counts after the reply: beside another test they came more than 1 s late
@pytest.mark.parametrize("kind", ["redis", "memcached"])
def test_counted_bytes_are_the_bytes_the_server_received_and_sent(kind):
    server = (start_redis if kind == "redis" else start_memcached)()  # its own: no earlier test's thread talks to it
    try:
        check_counted_bytes(kind, server)
    finally:
        server.stop()


def check_counted_bytes(kind, server):
    stats, keys = (redis_stats, ("total_net_input_bytes", "total_net_output_bytes")) if kind == "redis" else \
        (memcached_stats, ("bytes_read", "bytes_written"))
    request_size = len(REDIS_INFO) if kind == "redis" else len(b"stats\r\n")
    mine = meter.counter()
    before, first_reply = stats(server.url)
    sent, received = mine.sent, mine.received
    some_traffic(server.url)
    sent, received = mine.sent - sent, mine.received - received
    # the server counts a stats request when it reads it (so the second one is in `after`), and a reply once
    # written (so the first reply is in `after` too); nothing else talks to the server meanwhile. memcached adds a
    # worker thread's counts to its totals after the reply has gone, so a loaded host may read the last reply's
    # bytes a moment late: read again (each read's own request and reply taken out), at most for a second
    deadline, reads_in, replies_out = time.monotonic() + 1.0, request_size, first_reply
    while True:
        after, reply = stats(server.url)
        server_in = int(after[keys[0]]) - int(before[keys[0]]) - reads_in
        server_out = int(after[keys[1]]) - int(before[keys[1]]) - replies_out
        if (server_in, server_out) == (sent, received) or time.monotonic() > deadline:
            break
        reads_in, replies_out = reads_in + request_size, replies_out + reply  # this read's request and reply
        time.sleep(0.05)
    assert sent > 40_000 and received > 40_000  # the weights went both ways
    assert sent == server_in
    assert received == server_out


@pytest.mark.parametrize("kind", ["redis", "memcached"])
def test_a_jobs_result_and_records_carry_its_workers_profiles(kind, request):
    url = request.getfixturevalue(f"{kind}_server").url
    config = load_config({}, {"dataset": "synthetic", "train_samples": 1200, "test_samples": 300, "hidden_sizes": [16],
                              "batch_size": 50, "number_of_workers": 2, "n_fetch": 2, "n_push": 2, "max_epochs": 6,
                              "target_accuracy": 1.0, "store_url": url, "profile_hz": 50})
    store = open_store(url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, open_store(url, timeout_s=2.0), job_id, i),))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    status = job.read_status(store, job_id)
    result = status["result"]
    assert result["state"] == "done", result
    assert set(MEASURES) <= set(result)
    assert result["cpu_s"] > 0 and result["rss_peak_mb"] > 10 and result["cpu_peak"] > 0
    weights_bytes = 4 * (784 * 16 + 16 + 16 * 10 + 10)
    assert result["tx_bytes"] > result["pushes"] * weights_bytes  # every push sent the update at least
    assert result["rx_bytes"] > result["fetches"] * weights_bytes
    assert all(w["resources"]["tx"]["integral"] > 0 for w in status["workers"])
    kept = store.get_record(job_id, profile_name(0))
    # a series (the sampler thread shares the GIL with two training threads: in a busy suite it got 3 ticks)
    assert len(kept["t"]) == len(kept["cpu"]) >= 2 and max(kept["tx"]) > 0
