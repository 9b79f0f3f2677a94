"""The secret sweep: a Redis with a known password is the functions' own store, then every command and route
runs, and the password (plain or percent-encoded) must appear in none of what they print, answer, write or
record; only where it is the configuration: the stack copy and the secret file this test writes, and the
runtime's copies of that secret file for each replica (its /var/openfaas/secrets).

Both ways a function gets the password are used at once: the default store's URL carries it (stack.yml's
`store_url`, percent-encoded), and the store named `vault` takes it from the secret file `store-password`.
A store `gone` (the password, nothing listening) makes the error paths speak too.
"""

import base64
import json
import secrets
import subprocess
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
import redis
import yaml

from faasgd.local.services.stores import free_port, start_redis
from support.hostile_runtime import ROOT, faasgd, runtime_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
PASSWORD = f"Sw33p/{secrets.token_hex(8)}+@:!"  # a URL must percent-encode it
FORMS = {PASSWORD, quote(PASSWORD, safe=""), quote(PASSWORD), quote_plus(PASSWORD),
         base64.b64encode(PASSWORD.encode()).decode()}
SMALL = ["--dataset", "synthetic", "--train-samples", "2000", "--test-samples", "200", "--hidden-sizes", "16",
         "--max-epochs", "2", "--target-accuracy", "1.0", "--workers", "2"]
JOB = {"dataset": "synthetic", "train_samples": 2000, "test_samples": 200, "hidden_sizes": [16], "max_epochs": 2,
       "target_accuracy": 1.0, "number_of_workers": 2}
MATRIX = """name: sweep
fixed: {dataset: synthetic, train_samples: 2000, test_samples: 200, hidden_sizes: [16], max_epochs: 2,
        target_accuracy: 1.0, number_of_workers: 1}
matrix: {store: [default, vault]}
description: the functions' store is password-protected
"""


def stack_copy(tmp_path: Path, port: int) -> Path:
    encoded = quote(PASSWORD, safe="")
    stack = yaml.safe_load((ROOT / "stack.yml").read_text())
    for function in stack["functions"].values():
        function["handler"] = str(ROOT / function["handler"])
        function["environment"] = {**function["environment"], "store_url": f"redis://:{encoded}@127.0.0.1:{port}/0",
                                   "stores": f"vault=redis://127.0.0.1:{port}/1,gone=redis://:{encoded}@127.0.0.1:"
                                             f"{free_port()}/0,memcached=memcached://memcached.openfaas-fn:11211"}
    path = tmp_path / "stack.yml"
    path.write_text(yaml.safe_dump(stack))
    return path


class Sweep:
    """Everything the commands and routes gave back, by where it came from."""

    def __init__(self):
        self.seen: dict[str, bytes] = {}

    def add(self, where: str, text) -> None:
        self.seen[where] = text if isinstance(text, bytes) else str(text).encode()

    def run(self, where: str, *argv, **kwargs) -> subprocess.CompletedProcess:
        done = faasgd(*argv, **kwargs)
        self.add(f"{where}: stdout", done.stdout)
        self.add(f"{where}: stderr", done.stderr)
        return done

    def call(self, where: str, gateway, method: str, path: str, body=None, query=None):
        answer = gateway.request(method, path, body, {"Content-Type": "application/json"} if body else None, query)
        self.add(where, answer.body + json.dumps(dict(answer.headers)).encode())
        return answer

    def leaks(self) -> list[str]:
        return [f"{where} holds {form!r}" for where, text in self.seen.items() for form in FORMS
                if form.encode() in text]


def test_the_store_password_is_nowhere_but_in_its_configuration(tmp_path):
    server = start_redis(password=PASSWORD)
    directory, sweep = tmp_path / ".faasgd", Sweep()
    (directory / "secrets").mkdir(parents=True)
    (directory / "secrets" / "store-password").write_text(PASSWORD)
    (directory / "secrets" / "store-password").chmod(0o600)
    stack = stack_copy(tmp_path, server.port)
    try:
        with runtime_up(directory, stack) as runtime:
            exercise(runtime, sweep, tmp_path, stack)
            sweep_files(tmp_path, stack, sweep, "while up")
        sweep.add("faasgd down: stdout", runtime.down_output.stdout + runtime.down_output.stderr)
        sweep.add("faasgd up: stdout", runtime.up_output.stdout + runtime.up_output.stderr)
        sweep_files(tmp_path, stack, sweep, "after down")
        records = sweep_store(server.port, sweep)
    finally:
        server.stop()
    assert records >= 2 * 6, "the jobs' records (config, job, progress, result, events) were not all read"
    assert {"file .faasgd/state.json while up", "file .faasgd/logs/runtime.log after down",
            "file out/runs.csv after down"} <= set(sweep.seen)
    leaks = sweep.leaks()
    assert not leaks, "\n".join(leaks)


def exercise(runtime, sweep: Sweep, tmp_path: Path, stack: Path) -> None:
    """Every command and route, with jobs on the URL-password store, the secret-file store and a dead one."""
    d, gateway = runtime.dir, runtime.gateway
    sweep.run("status", "status", "--dir", d)
    sweep.run("status --json", "status", "--json", "--dir", d)
    sweep.run("train --dry-run", "train", "--dry-run", *SMALL, "--dir", d)
    for store in ("default", "vault"):
        trained = sweep.run(f"train {store}", "train", "--json", *SMALL, "--store", store, "--dir", d, timeout=300)
        assert trained.returncode == 0, trained.stdout[-1500:] + trained.stderr[-1500:]
    invoked = sweep.run("invoke", "invoke", "emnist-setup", "--dir", d, stdin=json.dumps(JOB))
    job_id = json.loads(invoked.stdout)["job_id"]
    sweep.run("invoke --async", "invoke", "emnist-setup", "--async", "--dir", d, stdin=json.dumps(JOB))
    sweep.run("status --watch", "status", job_id, "--watch", "--timeout", "120", "--dir", d)
    sweep.run("status job --json", "status", job_id, "--json", "--dir", d)
    failed = sweep.run("train gone", "train", *SMALL, "--store", "gone", "--dir", d)
    assert failed.returncode == 3 and "redis://:***@127.0.0.1:" in failed.stderr, failed.stderr
    for store in ("default", "vault", "gone", "memcached"):
        body = json.dumps({**JOB, "store": store}).encode()
        answer = sweep.call(f"POST emnist-setup store={store}", gateway, "POST", "/function/emnist-setup", body)
        if answer.status == 202:
            sweep.call(f"GET status store={store}", gateway, "GET", "/function/emnist-setup",
                       query={**answer.json()["status_query"], "events": "1"})
    sweep.call("GET status gone", gateway, "GET", "/function/emnist-setup", query={"job_id": job_id, "store": "gone"})
    sweep.call("GET status vault events", gateway, "GET", "/function/emnist-setup",
               query={"job_id": job_id, "events": "1"})
    sweep.run("scale 3", "scale", "emnist-train", "--replicas", "3", "--dir", d)
    sweep.run("scale 2", "scale", "emnist-train", "--replicas", "2", "--dir", d)
    for path in ("/system/functions", "/system/function/emnist-setup", "/system/function/emnist-train",
                 "/system/info", "/system/namespaces", "/system/secrets", "/system/logs?name=emnist-setup&tail=5000",
                 "/system/logs?name=emnist-train&tail=5000", "/metrics", "/healthz"):
        sweep.call(f"GET {path}", gateway, "GET", path)
    for name in ("emnist-setup", "emnist-train", "runtime"):
        sweep.run(f"logs {name}", "logs", name, "--dir", d)
    sweep.run("data list", "data", "list")
    sweep.run("data list --json", "data", "list", "--json")
    (tmp_path / "m.yml").write_text(MATRIX)
    batch = subprocess.run(["./test.sh", str(tmp_path / "m.yml"), "--out", str(tmp_path / "out"), "--stack", str(stack),
                            "--dir", str(d), "--port", str(runtime.port)], capture_output=True, text=True, cwd=ROOT,
                           timeout=300)
    sweep.add("test.sh: stdout", batch.stdout)
    sweep.add("test.sh: stderr", batch.stderr)
    assert batch.returncode == 0, batch.stdout[-1500:] + batch.stderr[-1500:]


def sweep_files(tmp_path: Path, stack: Path, sweep: Sweep, when: str) -> None:
    """Every file under .faasgd/ and test.sh's output folder, but the configuration: the stack copy, the secret
    file, and each replica's copy of it (replicas/<name>/secrets/store-password, its /var/openfaas/secrets)."""
    directory = tmp_path / ".faasgd"
    for path in sorted(p for p in [*directory.rglob("*"), *(tmp_path / "out").rglob("*")] if p.is_file()):
        copy = path.name == "store-password" and path.parent.name == "secrets" and \
            path.parent.parent.parent == directory / "replicas"
        if path not in (stack, directory / "secrets" / "store-password") and not copy:
            sweep.add(f"file {path.relative_to(tmp_path)} {when}", path.read_bytes())


def sweep_store(port: int, sweep: Sweep) -> int:
    """Every key and value of both databases of the password-protected Redis; how many records were read."""
    count = 0
    for db in (0, 1):
        with redis.Redis(host="127.0.0.1", port=port, db=db, password=PASSWORD) as client:
            for key in client.scan_iter(count=1000):
                kind = client.type(key)
                values = {b"string": lambda: [client.get(key)], b"list": lambda: client.lrange(key, 0, -1),
                          b"hash": lambda: [b"%s=%s" % kv for kv in client.hgetall(key).items()],
                          b"set": lambda: list(client.smembers(key))}[kind]()
                sweep.add(f"store db{db} {key.decode()}", key + b"\n" + b"\n".join(values))
                count += b":r:" in key or key.endswith(b":events")
    return count
