"""`faasgd train --direct` end to end: real worker processes against a real redis-server and memcached."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from faasgd.local.services.stores import free_port
from faasgd.store import open_store

pytestmark = pytest.mark.e2e

QUICK = ["--dataset", "synthetic", "--train-samples", "6000", "--test-samples", "1000", "--hidden-sizes", "32"]


def faasgd(*args, env=None, timeout=300):
    environment = {k: v for k, v in os.environ.items() if k.lower() not in ("store_url",)}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=environment)


def last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["redis", "memcached"])
def test_two_workers_reach_085_on_fashion_mnist(backend, redis_server, memcached_server):
    url = redis_server.url if backend == "redis" else memcached_server.url
    run = faasgd("train", "--direct", "--workers", "2", "--dataset", "fashion-mnist", "--target-accuracy", "0.85",
                 "--store-url", url, "--json")
    assert run.returncode == 0, run.stderr
    result = last_json(run.stdout)
    assert result["state"] == "done" and result["error"] is None
    assert result["reached_target"] and result["final_validation_accuracy"] >= 0.85  # the model kept at the crossing
    assert result["final_test_accuracy"] >= 0.80  # that model on the test rows
    assert 0 <= result["time_to_target_s"] <= result["wall_s"] and result["samples_to_target"] <= result["samples"]
    assert result["pushes"] > 0 and result["fetches"] > 0
    assert "model accuracy" in run.stderr and "worker" in run.stderr  # text for a person: stderr beside --json
    stored = open_store(url).get_record(result["job_id"], "result")
    assert stored == result


def test_train_json_is_one_document_that_json_tool_reads_and_the_global_batch_reaches_the_job(redis_server):
    run = faasgd("train", "--direct", "--workers", "2", "--global-batch-size", "64", "--max-epochs", "1",
                 "--target-accuracy", "1.0", "--store-url", redis_server.url, "--json", *QUICK)
    assert run.returncode == 0, run.stderr
    tool = subprocess.run([sys.executable, "-m", "json.tool"], input=run.stdout, capture_output=True, text=True,
                          timeout=60)  # as `faasgd train --json | python -m json.tool` reads it
    assert tool.returncode == 0, run.stdout[:2000]
    result = json.loads(tool.stdout)
    assert result["state"] == "done" and result["samples"] > 0
    assert "model accuracy" in run.stderr and "worker(s)" in run.stderr
    config = open_store(redis_server.url).get_record(result["job_id"], "config")
    assert (config["batch_size"], config["global_batch_size"], config["number_of_workers"]) == (32, 64, 2)


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--workers", "0"], "number_of_workers"),
        (["--batch-size", "0"], "batch_size"),
        (["--n-fetch", "0"], "n_fetch"),
        (["--learning-rate", "0"], "learning_rate"),
        (["--learning-rate", "-1"], "learning_rate"),
        (["--batch-size", "many"], "batch_size"),
        (["--dataset", "imagenet"], "dataset"),
        (["--mode", "loop"], "mode"),  # renamed: of-watchdog owns `mode`; the message names invocation_mode
        (["--store-url", "mongodb://127.0.0.1:27017"], "store_url"),
        (["--store-url", "redis://127.0.0.1:notaport/0"], "store_url"),
        (["--store-url", "redis:/127.0.0.1"], "store_url"),
        (["--store", "memcached"], "store"),  # with --direct this process is the configuration: give --store-url
    ],
)
def test_bad_input_exits_nonzero_naming_the_field_and_writes_nothing(flags, field, redis_server):
    empty_db = redis_server.url.rsplit("/", 1)[0] + "/7"
    client = open_store(empty_db)
    args = ["train", "--direct", "--store-url", empty_db, *flags] if "--store-url" not in flags else \
        ["train", "--direct", *flags]
    run = faasgd(*args)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"faasgd: error: {field}: "), run.stderr
    assert "Traceback" not in run.stderr
    import redis

    assert redis.Redis.from_url(empty_db).dbsize() == 0
    client.close()


def test_unknown_flag_is_rejected(redis_server):
    run = faasgd("train", "--direct", "--store-url", redis_server.url, "--batchsize", "3")
    assert run.returncode == 2 and "--batchsize" in run.stderr


def test_store_down_at_start_is_one_line_naming_the_url():
    url = f"redis://127.0.0.1:{free_port()}/0"
    run = faasgd("train", "--direct", "--store-url", url, *QUICK)
    assert run.returncode == 3
    assert run.stderr.strip().count("\n") == 0 and url in run.stderr and "Traceback" not in run.stderr
    url = f"memcached://127.0.0.1:{free_port()}"
    run = faasgd("train", "--direct", "--store-url", url, *QUICK)
    assert run.returncode == 3 and url in run.stderr


def start_persistent_redis(port, workdir):
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            open_store(f"redis://127.0.0.1:{port}/0").ping()
            return proc
        except Exception:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


def wait_for_progress(url, proc, deadline_s=60, workers=2):
    """Wait until a job exists and each of its `workers` has pushed (all are mid-run, not starting: a call that
    starts during an outage is another case); returns the job id from the "job J: ..." line (on stderr: stdout
    holds only the --json document)."""
    line = proc.stderr.readline()
    while line and not line.startswith("job "):
        line = proc.stderr.readline()
    job_id = line.split()[1].rstrip(":")
    store = open_store(url)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        records = [store.get_record(job_id, f"progress:{worker}") for worker in range(workers)]
        if all(record and record.get("pushes", 0) > 2 for record in records):
            return job_id
        time.sleep(0.1)
    raise AssertionError("no progress")


def start_training(url, max_epochs, store_timeout_s):
    return subprocess.Popen([sys.executable, "-m", "faasgd.cli", "train", "--direct", "--store-url", url, "--workers", "2",
                             "--max-epochs", str(max_epochs), "--target-accuracy", "1.0",
                             "--store-timeout-s", str(store_timeout_s), "--json", *QUICK],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.serial  # kills the store mid-run; failed twice in 4 runs two at a time (worker 1: store unavailable), never alone
def test_store_restarted_mid_run_workers_retry_and_the_job_completes(tmp_path):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = start_persistent_redis(port, tmp_path)
    train = start_training(url, max_epochs=25, store_timeout_s=30)
    try:
        job_id = wait_for_progress(url, train)
        server.send_signal(signal.SIGTERM)
        server.wait(10)
        time.sleep(1.5)  # the store is down: workers retry with backoff
        server = start_persistent_redis(port, tmp_path)
        out, err = train.communicate(timeout=120)
        result = last_json(out)
        assert train.returncode == 0, (result.get("error"), err[-6000:])
        assert result["job_id"] == job_id and result["state"] == "done"
        assert result["samples"] == 25 * 5400  # every epoch trained: the outage cost time, not work
        assert result["retries"] >= 1
        assert open_store(url).get_record(job_id, "result")["state"] == "done"
    finally:
        train.kill()
        server.terminate()
        server.wait(10)


def test_store_gone_for_good_fails_the_job_after_the_deadline(tmp_path):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = start_persistent_redis(port, tmp_path)
    train = start_training(url, max_epochs=50, store_timeout_s=3)
    try:
        wait_for_progress(url, train)
        server.terminate()
        server.wait(10)
        stopped = time.monotonic()
        out, err = train.communicate(timeout=120)
        elapsed = time.monotonic() - stopped
        assert train.returncode == 1
        result = last_json(out)
        assert result["state"] == "failed" and url in result["error"]
        assert elapsed >= 3  # the workers kept retrying until their deadline
        assert "Traceback" not in err
    finally:
        train.kill()
        if server.poll() is None:
            server.kill()


def test_node_local_topology_trains_through_the_cache_and_reports_its_staleness(redis_server, memcached_server):
    common = ["train", "--direct", "--store-url", redis_server.url, "--workers", "2", "--max-epochs", "12", "--target-accuracy", "1.0",
              "--n-fetch", "1", "--n-push", "2", "--json", *QUICK]  # fetches between pushes read the cache
    direct = last_json(faasgd(*common).stdout)
    cached = faasgd(*common, "--store-topology", "node-local", "--local-store-url", memcached_server.url,
                    "--local-refresh-s", "0.05")
    assert cached.returncode == 0, cached.stderr
    result = last_json(cached.stdout)
    assert result["state"] == "done" and result["samples"] == direct["samples"] == 12 * 5400
    assert result["final_test_accuracy"] > 0.5
    assert result["staleness_p50"] is not None and result["staleness_p99"] >= result["staleness_p50"]
    from faasgd.store import open_store

    assert open_store(memcached_server.url).get_weights(result["job_id"])[1] >= 1  # the cache was refreshed
