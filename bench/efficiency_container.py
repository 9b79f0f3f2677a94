"""A `faasgd train` job through the README's Deploy path: its CPU-seconds, samples and wall time, and the replicas'
BLAS threads.

The Deploy path: a copy of the project (faas-cli writes ./build there), `faasgd up --backend docker` on it (stores,
gateway and a registry on loopback; the replicas are containers with the stack's limits: `--cpus 1`, 1 GiB),
`faas-cli login` and `faas-cli up -f stack.yml --filter 'emnist-*'` (the template's test stage skipped), then
`faasgd train --workers W` against it.

    with deployed() as runtime:                            # up, login, build, push, deploy; down at the end
        row = container_row(workers=2, epochs=2, runtime=runtime)
    container_row(workers=2, epochs=2)                      # the same, deploying for this one row

A row's figures (keys of the dict `container_row` returns):
- cpu_s: CPU-seconds of every process the job ran on: the function containers (emnist-setup's and emnist-train's
  replicas: their cgroups' cpuacct.usage, or cpu.stat usage_usec on cgroup v2, read before and after the job),
  the store server (Redis's INFO cpu) and the `faasgd train` command (its reaped rusage). As bench/efficiency.py
  counts a `--direct` job's command, workers and store. The runtime's own processes (gateway, queue) are
  `runtime_cpu_s`, not in cpu_s: a cluster runs them anyway.
- containers_cpu_s, store_cpu_s, command_cpu_s: cpu_s's parts;
- samples, wall_s (time.perf_counter around the command), time_to_target_s and reached_target (the job's own),
  final_test_accuracy;
- blas_threads: the BLAS threads an emnist-train replica's function process runs (the line index.py logs at its
  start, "BLAS threads: N (...)"); the largest over the replicas, None when no replica said;
- clock: which CPU clock was read.

`python bench/efficiency_container.py` prints, for one deployment: a 784x100 float32 product of 128 rows in an
emnist-train container (docker exec, so under the same `--cpus 1`): as the image sets its threads, with one thread,
and with a thread per core of the machine (the image's threads before they followed the CPU limit); then a job to
0.85 and an `--epochs` job (target 1.0, so it runs them all), `--rounds` times each.

Usage: python bench/efficiency_container.py [--workers 2] [--epochs 2] [--rounds 1] [--target 0.85]
       [--out results/efficiency-container]
Needs a Docker daemon with the template's base images (scripts/ensure-docker.sh) and faas-cli ($FAAS_CLI, PATH, or
../shared/bin beside the project).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ("emnist-setup", "emnist-train")
# what faas-cli build reads, and every handler stack.yml names (`faasgd up` reads them all, whatever its --filter)
PROJECT = ("stack.yml", "template", *FUNCTIONS, "stacking-driver", "stacking-trainer", "stacking-reducer",
           "stacking-metatrainer", "pyproject.toml", "src")
TAG = "bench-container"  # absent before the deploy: `faasgd up` starts nothing until faas-cli deploys
BUILD_TIMEOUT_S = 1800
THREADS_LINE = re.compile(r"BLAS threads: (\d+)")
CLOCK = "the containers' cgroup CPU accounting, Redis INFO cpu, the command's reaped rusage; wall: time.perf_counter"
MATMUL = """
import json, os, sys, time
try:
    from faasgd import cpu_limit
    cpu_limit.limit_threads(os.environ)  # what index.py does at its start
except ImportError:
    pass  # an image from before the module: its environment alone decides
import numpy as np
rng = np.random.default_rng(0)
x, w = rng.random((128, 784), dtype=np.float32), rng.random((784, 100), dtype=np.float32)
for _ in range(200):
    x @ w
n = int(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(n):
    x @ w
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
with open("/proc/self/status") as status:
    threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
print(json.dumps({"wall_ms": wall / n * 1e3, "cpu_ms": cpu / n * 1e3, "process_threads": threads}))
"""


def faasgd(*args: str, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """The `faasgd` command of this interpreter (its PYTHONPATH too), run in `cwd`."""
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def checked(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done


def docker(*args: str, timeout: float = 120) -> str:
    return checked(subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout),
                   f"docker {args[0]}").stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def faas_cli_binary() -> str:
    """$FAAS_CLI, faas-cli on PATH, else ../shared/bin/faas-cli beside the project (where the tests find it)."""
    found = os.environ.get("FAAS_CLI") or shutil.which("faas-cli") or ROOT.parent / "shared" / "bin" / "faas-cli"
    if not os.access(found, os.X_OK):
        raise RuntimeError("faas-cli not found: set FAAS_CLI, put it on PATH or in ../shared/bin")
    return str(found)


@dataclass
class Deployment:
    """A `faasgd up --backend docker` with emnist-setup and emnist-train deployed by `faas-cli up`."""

    project: Path
    directory: Path  # the runtime's folder (--dir)
    state: dict  # its state.json

    @property
    def runtime_id(self) -> str:
        return self.state["runtime_id"]

    def containers(self, function: str | None = None) -> list[str]:
        """The runtime's running containers (of `function` when given), by full id."""
        filters = ["--filter", f"label=faasgd.runtime={self.runtime_id}"]
        if function:
            filters += ["--filter", f"label=faas_function={function}"]
        return docker("ps", "-q", "--no-trunc", *filters).split()

    def runtime_pids(self) -> list[int]:
        """The runtime's own processes: the daemon (gateway, queue) and what it started on the host, not the stores."""
        import psutil

        daemon = psutil.Process(self.state["pid"])
        stores = {entry["pid"] for entry in self.state.get("stores", {}).values()}
        return [p.pid for p in [daemon, *daemon.children(recursive=True)] if p.pid not in stores]


def copy_project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in PROJECT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, folder / name)
    return folder


def wait_available(deployment: Deployment, timeout_s: float = 180) -> None:
    """Until both functions have every replica up (their containers running and healthy in the gateway's eyes)."""
    import httpx

    user, password = (deployment.directory / "secrets" / name for name in ("basic-auth-user", "basic-auth-password"))
    auth = (user.read_text().strip(), password.read_text().strip())
    deadline = time.monotonic() + timeout_s
    while True:
        answer = httpx.get(deployment.state["gateway_url"] + "/system/functions", auth=auth, timeout=10,
                           trust_env=False).json()
        if sorted(f["name"] for f in answer) == list(FUNCTIONS) and \
                all(f["availableReplicas"] >= f["replicas"] > 0 for f in answer):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"functions not available after {timeout_s:.0f} s: {answer}")
        time.sleep(0.5)


@contextlib.contextmanager
def deployed(workdir: Path | None = None):
    """The README's Deploy path in a temporary copy of the project; `faasgd down` and the images removed after."""
    with tempfile.TemporaryDirectory(prefix="faasgd-bench-container-", dir=workdir) as folder:
        project = copy_project(Path(folder) / "project")
        directory = Path(folder) / "runtime"
        home = Path(folder) / "home"
        home.mkdir()
        checked(faasgd("up", "--backend", "docker", "--port", str(free_port()), "--dir", str(directory),
                       "--filter", "emnist-*", "--wait", cwd=project, env={"TAG": TAG}), "faasgd up")
        images: list[str] = []
        try:
            state = json.loads((directory / "state.json").read_text())
            registry = state["registry"]["url"]
            images = [f"{registry}/{name}:{TAG}" for name in FUNCTIONS]
            env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "REGISTRY": registry,
                   "TAG": TAG, "OPENFAAS_URL": state["gateway_url"]}
            password = (directory / "secrets" / "basic-auth-password").read_text().strip()
            cli = faas_cli_binary()
            checked(subprocess.run([cli, "login", "-u", "admin", "--password-stdin"], input=password, text=True,
                                   capture_output=True, cwd=project, env=env), "faas-cli login")
            checked(subprocess.run([cli, "up", "-f", "stack.yml", "--filter", "emnist-*", "--build-arg",
                                    "TEST_ENABLED=false"], capture_output=True, text=True, cwd=project, env=env,
                                   timeout=BUILD_TIMEOUT_S), "faas-cli up")
            deployment = Deployment(project, directory, state)
            wait_available(deployment)
            yield deployment
        finally:
            faasgd("down", "--dir", str(directory), cwd=project)
            if images:
                subprocess.run(["docker", "rmi", *images], capture_output=True)


# -- CPU clocks -------------------------------------------------------------------------------------
def container_cpu_s(container: str) -> float:
    """The container's CPU-seconds so far, from its cgroup as the host sees it (its PID 1's /proc/<pid>/cgroup)."""
    pid = json.loads(docker("inspect", container))[0]["State"]["Pid"]
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
                usage = Path("/sys/fs/cgroup", mount, path.lstrip("/"), "cpuacct.usage")
                if usage.is_file():
                    return int(usage.read_text()) / 1e9
        if controllers == "":
            stat = Path("/sys/fs/cgroup", path.lstrip("/"), "cpu.stat")
            if stat.is_file():
                return int(dict(line.split() for line in stat.read_text().splitlines())["usage_usec"]) / 1e6
    raise RuntimeError(f"no CPU accounting found for container {container[:12]} (pid {pid})")


def processes_cpu_s(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def store_cpu_s(url: str, secrets: Path) -> float:
    import redis

    from faasgd.local.lifecycle.credentials import store_password

    # under docker the runtime's Redis requires the functions' secret store-password
    info = redis.Redis.from_url(url, password=store_password(secrets, generate=False)).info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def blas_threads(deployment: Deployment) -> tuple[int | None, list[int]]:
    """(the largest, each) of the BLAS thread counts emnist-train's replicas logged at their start."""
    counts = []
    for container in deployment.containers("emnist-train"):
        logs = subprocess.run(["docker", "logs", container], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True).stdout
        found = THREADS_LINE.findall(logs)
        if found:
            counts.append(int(found[-1]))
    return (max(counts) if counts else None), counts


# -- a row ------------------------------------------------------------------------------------------
def run_row(deployment: Deployment, workers: int, epochs: int, target_accuracy: float, seed: int) -> dict:
    containers = deployment.containers()
    store_url = deployment.state["stores"]["redis"]["url"]
    runtime = deployment.runtime_pids()
    before = ({c: container_cpu_s(c) for c in containers}, store_cpu_s(store_url, deployment.directory / "secrets"), processes_cpu_s(runtime))
    argv = [sys.executable, "-m", "faasgd.cli", "train", "--dir", str(deployment.directory), "--workers",
            str(workers), "--max-epochs", str(epochs), "--target-accuracy", str(target_accuracy), "--seed",
            str(seed), "--json", "--quiet"]
    command_before = _children_cpu_s()
    started = time.perf_counter()
    done = checked(subprocess.run(argv, capture_output=True, text=True, cwd=deployment.project), "faasgd train")
    wall = time.perf_counter() - started
    command = _children_cpu_s() - command_before
    result = json.loads(done.stdout)
    ran = [c for c in containers if c in deployment.containers()]
    if len(ran) != len(containers):
        raise RuntimeError("a container was replaced during the job: its CPU-seconds are not all counted")
    containers_cpu = sum(container_cpu_s(c) - before[0][c] for c in ran)
    store = store_cpu_s(store_url, deployment.directory / "secrets") - before[1]
    threads, each = blas_threads(deployment)
    return {"cpu_s": containers_cpu + store + command, "containers_cpu_s": containers_cpu, "store_cpu_s": store,
            "command_cpu_s": command, "runtime_cpu_s": processes_cpu_s(runtime) - before[2],
            "samples": result["samples"], "wall_s": wall, "time_to_target_s": result.get("time_to_target_s"),
            "reached_target": result.get("reached_target"), "final_test_accuracy": result.get("final_test_accuracy"),
            "state": result.get("state"), "blas_threads": threads, "blas_threads_by_replica": each,
            "workers": workers, "epochs": epochs, "target_accuracy": target_accuracy, "clock": CLOCK}


def _children_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def container_row(workers: int = 2, epochs: int = 2, target_accuracy: float = 1.0, seed: int = 0,
                  runtime: Deployment | None = None) -> dict:
    """One `faasgd train --workers W --max-epochs E --target-accuracy T` job through the Deploy path (on `runtime`,
    else on a deployment made and removed for it): {"cpu_s", "samples", "wall_s", "blas_threads", ...} (module
    docstring). Target 1.0 (the default) runs all `epochs`, as bench/efficiency.py's rows do."""
    if runtime is not None:
        return run_row(runtime, workers, epochs, target_accuracy, seed)
    with deployed() as made:
        return run_row(made, workers, epochs, target_accuracy, seed)


# -- the product in a container ---------------------------------------------------------------------
def matmul_in_container(container: str, env: dict[str, str], repeats: int = 3000) -> dict:
    """A 128x784 @ 784x100 float32 product in `container` (docker exec: its cgroup, its CPU limit), `env` added:
    wall and CPU milliseconds per product, and the threads of the process that ran it."""
    flags = [arg for key, value in env.items() for arg in ("--env", f"{key}={value}")]
    return json.loads(docker("exec", *flags, container, "python", "-c", MATMUL, str(repeats), timeout=300))


def matmul_rows(deployment: Deployment) -> dict[str, dict]:
    container = deployment.containers("emnist-train")[0]
    cores = str(os.cpu_count())
    settings = {"as the image sets it": {}, "1 thread (OPENBLAS_NUM_THREADS=1)": {"OPENBLAS_NUM_THREADS": "1"},
                f"{cores} threads, one per core (OPENBLAS_NUM_THREADS={cores})": {"OPENBLAS_NUM_THREADS": cores}}
    return {name: matmul_in_container(container, env) for name, env in settings.items()}


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2, help="epochs of the fixed-length job (target 1.0)")
    parser.add_argument("--target", type=float, default=0.85, help="the target of the time-to-accuracy job")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default="results/efficiency-container")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; clock: {CLOCK}", flush=True)
    rows: dict[str, list[dict]] = {"target": [], "epochs": []}
    with deployed() as deployment:
        limits = json.loads(docker("inspect", deployment.containers("emnist-train")[0]))[0]["HostConfig"]
        print(f"emnist-train containers: NanoCpus {limits['NanoCpus']}, Memory {limits['Memory']}", flush=True)
        products = matmul_rows(deployment)
        print("128x784 @ 784x100 float32 in an emnist-train container (docker exec, its CPU limit):")
        for name, got in products.items():
            print(f"  {name}: {got['wall_ms']:.3f} ms wall, {got['cpu_ms']:.3f} ms CPU a product "
                  f"(process threads: {got['process_threads']})", flush=True)
        for round_index in range(args.rounds):
            for kind, epochs, target in (("target", 20, args.target), ("epochs", args.epochs, 1.0)):
                row = run_row(deployment, args.workers, epochs, target, round_index)
                rows[kind].append(row)
                print(f"round {round_index + 1}, {kind}: " + json.dumps(
                    {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "clock"}),
                    flush=True)
    print(f"\n{args.workers} workers, medians [min-max] over {args.rounds} round(s):")
    to_target = [r["time_to_target_s"] for r in rows["target"] if r["time_to_target_s"] is not None]
    print(f"  to {args.target}: wall {spread([r['wall_s'] for r in rows['target']])} s, time_to_target_s "
          f"{spread(to_target) if to_target else '-'}, CPU {spread([r['cpu_s'] for r in rows['target']])} s "
          f"(containers {spread([r['containers_cpu_s'] for r in rows['target']])})")
    fixed = rows["epochs"]
    print(f"  {args.epochs} epochs: wall {spread([r['wall_s'] for r in fixed])} s, CPU {spread([r['cpu_s'] for r in fixed])}"
          f" s, µs/sample {spread([r['cpu_s'] / r['samples'] * 1e6 for r in fixed], 1)}, "
          f"BLAS threads {sorted({r['blas_threads'] for r in fixed}, key=str)}")
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "efficiency_container.json").write_text(json.dumps({"matmul": products, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
