"""A pod on one machine, run inside a private network namespace (`unshare -n`): scenarios on the real of-watchdog.

What a cluster gives the function, each on the namespace's own loopback: redis-server (the store),
nats-server and faasgd's OpenFaaS-compatible gateway (the async route, CE delivery), and one pod of
emnist-train started as its image starts: `python -S bootstrap.py fwatchdog` in the shrink-wrapped build
folder, with the environment faas-netes would give it (the Dockerfile's ENV, then stack.yml's environment,
the stores' Service names resolved to loopback) and the image's Python (the core alone) first on PATH.
One watchdog per namespace: it listens on 8080 and on a fixed metrics port 8081, on all interfaces.

Usage: python pod.py SCENARIO '{"python": ..., "build": ..., "fwatchdog": ..., "workdir": ..., ...}'
Prints one JSON object, the scenario's findings, on its last line of output.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import yaml

from faasgd import job
from faasgd.config import load_config
from faasgd.functions import orchestrate, supervise
from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.queue.jetstream import JetStreamBroker
from faasgd.local.services.broker import start_nats
from faasgd.local.services.stores import start_redis
from faasgd.openfaas import GatewayClient, wait_for_job
from faasgd.store import open_store

ROOT = pathlib.Path(__file__).resolve().parents[2]
WATCHDOG_URL = "http://127.0.0.1:8080"
STARTED: list = []  # everything a scenario started, stopped when it ends


def image_env(dockerfile: str) -> dict[str, str]:
    """The ENV the template's Dockerfile sets (the last value of each name), PATH left to the caller."""
    values = {}
    for line in re.sub(r"\\\n", " ", dockerfile).splitlines():
        match = re.match(r"\s*ENV\s+(.*)", line)
        for name, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)', match.group(1) if match else ""):
            values[name] = value.strip('"')
    values.pop("PATH", None)
    return values


class Pod:
    """emnist-train's container: bootstrap.py -> fwatchdog -> index.py, with faas-netes' environment."""

    def __init__(self, args: dict, overrides: dict[str, str]):
        self.args, self.folder = args, pathlib.Path(args["build"]) / "emnist-train"
        stack = yaml.safe_load((ROOT / "stack.yml").read_text())["functions"]["emnist-train"]["environment"]
        env = {**image_env((self.folder / "Dockerfile").read_text()), **{k: str(v) for k, v in stack.items()}}
        tmp = pathlib.Path(args["workdir"]) / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self.env = {**env, **overrides, "PATH": f"{pathlib.Path(args['python']).parent}:/usr/local/bin:/usr/bin:/bin",
                    "HOME": str(self.folder), "TMPDIR": str(tmp), "LANG": "C.UTF-8", "HOSTNAME": "emnist-train-pod"}
        self.log = open(pathlib.Path(args["workdir"]) / "pod.log", "ab")
        self.process: subprocess.Popen | None = None

    def start(self) -> "Pod":
        self.process = subprocess.Popen([self.args["python"], "-S", "bootstrap.py", self.args["fwatchdog"]],
                                        cwd=self.folder, env=self.env, stdout=self.log, stderr=self.log,
                                        start_new_session=True)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 9)  # the watchdog and index.py
            self.process.wait(10)

    def container_gone(self, timeout_s: float = 10) -> None:
        """The watchdog (the container's PID 1) has exited: as the kubelet does, kill what is left in the container
        (index.py may still be finishing its hand-off) and wait until it is gone, so the next pod's ports are free
        (here both pods share one network namespace; on a cluster each pod has its own)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                return
            assert time.monotonic() < deadline, "the old pod's processes outlived SIGKILL"
            time.sleep(0.05)

    def healthy(self) -> bool:
        try:
            return httpx.get(WATCHDOG_URL + "/_/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def wait_healthy(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.healthy():
            assert self.process.poll() is None, f"the watchdog exited with {self.process.returncode}"
            assert time.monotonic() < deadline, "the pod never became ready"
            time.sleep(0.05)


class PodRegistry:
    """The gateway's view of the cluster: one function, its one pod, routed to only while ready."""

    def __init__(self, pod: Pod):
        self.pod = pod

    def function_names(self) -> list[str]:
        return ["emnist-train"]

    def describe(self, name: str) -> dict | None:
        return {"name": name, "image": "emnist-train", "replicas": 1, "availableReplicas": int(self.pod.healthy()),
                "labels": {}, "envProcess": "python index.py", "namespace": "openfaas-fn"} if name == "emnist-train" else None

    def replica_urls(self, name: str) -> list[str]:
        return [WATCHDOG_URL] if name == "emnist-train" and self.pod.healthy() else []

    def starting(self, name: str) -> bool:
        return False  # a pod that is not ready gets no call, at once (the probes' tests read that)

    def calls_per_replica(self, name: str) -> int:
        return 4  # the template's waitress threads

    def scale(self, name: str, replicas: int) -> int:
        return 1

    def call_slots(self) -> int:
        return 1


def cluster(args: dict, **overrides: str):
    """(store, gateway client, pod): the namespace's loopback up, the stores and the gateway running."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    redis, nats = start_redis(), start_nats(pathlib.Path(args["workdir"]) / "jetstream")
    pod = Pod(args, {"store_url": redis.url, "healthcheck_interval": "1s", **overrides})
    gateway = LocalGateway(PodRegistry(pod), GatewayOptions(port=0, ack_wait_s=600, queue_workers=1),
                           broker=JetStreamBroker(nats.url))
    STARTED.extend([pod, gateway, nats, redis])
    gateway.start()
    pod.env["gateway_url"] = gateway.url
    return open_store(redis.url), GatewayClient(gateway.url, timeout_s=60), pod


def create(store, **config) -> tuple[object, str]:
    values = {"dataset": "synthetic", "test_samples": 300, "target_accuracy": 1.0, "number_of_workers": 1,
              "store_url": "redis://placeholder:6379/0", **config}
    config = load_config({}, values)
    return config, orchestrate.create_job(store, config)


def watch(store, gateway: GatewayClient, job_id: str, timeout_s: float) -> dict:
    """Wait for the job as emnist-setup's status read would: reading it also supervises its workers."""
    def read() -> dict:
        status = job.read_status(store, job_id)
        if status["state"] == "running":
            config, meta = job.read_job(store, job_id)
            relaunch = lambda request: gateway.invoke_async("emnist-train", request.body())  # noqa: E731
            supervise.supervise(store, job_id, config, meta, relaunch)
        return status

    return wait_for_job(read, timeout_s, poll_s=0.2)


def steps_lasting(seconds: float, hidden: list[int], batch: int) -> int:
    """How many minibatch steps of this network take about `seconds` here (timed on this machine)."""
    import numpy as np

    from faasgd import model

    sizes = model.layer_sizes(784, hidden, 10)
    rng = np.random.default_rng(0)
    weights, x = model.init_params(sizes, rng), rng.random((batch, 784), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    model.loss_and_grads(weights, sizes, x, y)
    started = time.perf_counter()
    for _ in range(3):
        model.loss_and_grads(weights, sizes, x, y)
    return max(4, int(seconds / ((time.perf_counter() - started) / 3)))


def tally(store, job_id: str, config) -> dict:
    records = [store.worker_record(job_id, w) for w in range(config.number_of_workers)]
    return {"version": store.get_weights(job_id)[1], "pushes": sum(r["pushes"] for r in records),
            "samples": sum(r["samples"] for r in records), "invocations": [r["invocations"] for r in records]}


def first_instant(args: dict) -> dict:
    """50 calls fired at the first instant the watchdog's port takes a connection."""
    _, _, pod = cluster(args)
    pod.start()
    while True:
        try:
            httpx.get(WATCHDOG_URL + "/_/health", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.001)

    def call(_):
        answer = httpx.post(WATCHDOG_URL + "/", json={"job_id": "jnothere0000001", "worker_id": 0}, timeout=120)
        return answer.status_code, answer.headers.get("content-type", ""), answer.content

    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(call, range(50)))
    return {"statuses": [s for s, _, _ in answers], "json": sum(t == "application/json" for _, t, _ in answers),
            "empty": sum(not body for _, _, body in answers), "first": answers[0][2].decode(errors="replace")}


def tiny_job(args: dict) -> dict:
    """A small two-worker job through the gateway's async route and the real watchdog, to its end."""
    store, gateway, pod = cluster(args)
    pod.start().wait_healthy()
    config, job_id = create(store, train_samples=2000, hidden_sizes=[16], batch_size=50, max_epochs=3,
                            number_of_workers=2, store_url=pod.env["store_url"])
    for worker in range(2):
        gateway.invoke_async("emnist-train", {"job_id": job_id, "worker_id": worker})
    status = watch(store, gateway, job_id, 180)
    return {"state": status["state"], "error": (status["result"] or {}).get("error"), "expected_samples": 3 * 1800,  # 200 of the 2000 rows held out to validate
           
            **tally(store, job_id, config)}


def sigterm(args: dict) -> dict:
    """SIGTERM to the pod mid-training (a scale-down, a rolling update), then a new pod: the job still ends."""
    store, gateway, pod = cluster(args)
    pod.start().wait_healthy()
    config, job_id = create(store, train_samples=6000, hidden_sizes=[64], batch_size=50, max_epochs=12, n_push=5,
                            lease_s=2, start_timeout_s=5, max_reinvocations=10, store_url=pod.env["store_url"])
    gateway.invoke_async("emnist-train", {"job_id": job_id, "worker_id": 0})
    deadline = time.monotonic() + 120
    while (store.worker_record(job_id, 0) or {}).get("pushes", 0) < 30:
        assert time.monotonic() < deadline, "no training before the SIGTERM"
        time.sleep(0.05)
    pod.process.terminate()
    watchdog_exit = pod.process.wait(60)
    pod.container_gone()
    at_sigterm = store.worker_record(job_id, 0)
    pod.start().wait_healthy()  # Kubernetes replaces the pod
    status = watch(store, gateway, job_id, 240)
    log = (pathlib.Path(args["workdir"]) / "pod.log").read_text(errors="replace")
    return {"state": status["state"], "error": (status["result"] or {}).get("error"), "watchdog_exit": watchdog_exit,
            "expected_samples": 12 * 5400, "pushes_at_sigterm": at_sigterm["pushes"],
            "handed_off": "handing off (the replica is shutting down" in log, **tally(store, job_id, config)}


def exec_timeout(args: dict) -> dict:
    """A call that runs past exec_timeout: index.py answers a JSON 504 first; the work stops at its next
    push and is handed on, and the job still ends with every step trained once."""
    store, gateway, pod = cluster(args, exec_timeout="3s", write_timeout="3s")
    pod.start().wait_healthy()
    steps = steps_lasting(6.0, [2048, 2048], 512)  # one push that outlasts the 3 s deadline on this machine
    config, job_id = create(store, train_samples=steps * 512 + 1, validation_samples=1, hidden_sizes=[2048, 2048], batch_size=512,
                            max_epochs=1, n_fetch=steps, n_push=steps, store_url=pod.env["store_url"])
    started = time.monotonic()
    answer = httpx.post(WATCHDOG_URL + "/", json={"job_id": job_id, "worker_id": 0}, timeout=60)
    elapsed = time.monotonic() - started
    status = watch(store, gateway, job_id, 240)
    return {"status": answer.status_code, "content_type": answer.headers.get("content-type", ""),
            "body": answer.text, "elapsed": elapsed, "internal": answer.headers.get("X-OpenFaaS-Internal"),
            "state": status["state"], "error": (status["result"] or {}).get("error"), "expected_samples": steps * 512,
            **tally(store, job_id, config)}


if __name__ == "__main__":
    try:
        findings = globals()[sys.argv[1]](json.loads(sys.argv[2]))
    finally:
        for started in STARTED:
            started.stop()
    print(json.dumps(findings), flush=True)
