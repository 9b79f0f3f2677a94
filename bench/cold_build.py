"""The cold build of the README's Deploy section: `faas-cli build` of emnist-setup and emnist-train with nothing of an
earlier build in Docker's cache, as the first `faas-cli up` runs it (the push to the loopback registry and the deploy
add seconds; not here). The second function's build reuses the layers the first one made, as on a user's machine;
`--no-cache` builds every layer of both (Docker's --no-cache). The base images must be there (the bench never pulls).

Figures, one build per run (each takes minutes):
  wall      time.perf_counter around faas-cli (monotonic)
  docker    CPU-seconds charged to Docker's cgroup over the build (cgroup v1 cpuacct.usage of /docker: every RUN
            step's container, counted hierarchically, so a step's CPU stays counted after its container is gone),
            plus dockerd's and containerd's own (their rusage): what the build costs whatever else the machine runs.
            Another container running meanwhile would be counted too: the bench says how many ran.
  machine   all CPUs' busy seconds (/proc/stat) and the load average at start and end: how loaded the machine was
  steps     each Dockerfile step's wall seconds (the classic builder's "Step N/M" lines, time-stamped as they
            arrive), summed over both functions by instruction, largest first
The images it made are removed at the end (its tag, and the untagged test stages it left).

Usage: python bench/cold_build.py [--build-arg KEY=VALUE ...] [--no-cache] [--json]   (from the repository root, Docker ready:
       scripts/ensure-docker.sh)
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import psutil
import yaml

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ("emnist-setup", "emnist-train")
PROJECT = ("stack.yml", "template", *FUNCTIONS, "pyproject.toml", "src")
TAG = "cold-build-bench"
DOCKER_CPU = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
STEP = re.compile(r"Step (\d+)/(\d+) : (.*)$")  # the classic builder's, after any prefix faas-cli adds


def project_copy(folder: Path) -> Path:
    for name in PROJECT:
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, folder / name)
    stack = yaml.safe_load((folder / "stack.yml").read_text())
    stack["functions"] = {name: stack["functions"][name] for name in FUNCTIONS}
    (folder / "stack.yml").write_text(yaml.safe_dump(stack, sort_keys=False))
    return folder


def docker_cpu_s() -> float:
    try:
        return int(DOCKER_CPU.read_text()) / 1e9
    except OSError:
        return 0.0


def daemons_cpu_s() -> float:
    total = 0.0
    for process in psutil.process_iter(["name", "cpu_times"]):
        if process.info["name"] in ("dockerd", "containerd") and process.info["cpu_times"] is not None:
            times = process.info["cpu_times"]
            total += times.user + times.system
    return total


def machine_busy_s() -> float:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def build(project: Path, build_args: list[str], no_cache: bool) -> tuple[float, dict[str, float], str]:
    """Run faas-cli build; (wall seconds, seconds by step instruction, the output's tail)."""
    argv = [shutil.which("faas-cli") or str(ROOT.parent / "shared" / "bin" / "faas-cli"), "build", "-f", "stack.yml",
            "--filter", "emnist-*", *(["--no-cache"] if no_cache else []), *[f"--build-arg={arg}" for arg in build_args]]
    env = {**os.environ, "TAG": TAG, "REGISTRY": "127.0.0.1:5000"}
    steps: dict[str, float] = defaultdict(float)
    current, since, tail = None, None, []
    started = time.perf_counter()
    with subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL) as popen:
        for line in popen.stdout:
            now = time.perf_counter()
            tail = (tail + [line])[-40:]
            match = STEP.search(line.strip())
            if match:
                if current is not None:
                    steps[current] += now - since
                current, since = match.group(3)[:70], now
        if current is not None:
            steps[current] += time.perf_counter() - since
    wall = time.perf_counter() - started
    if popen.returncode != 0:
        raise SystemExit("faas-cli build failed:\n" + "".join(tail))
    return wall, dict(steps), "".join(tail)


def cleanup(after: float) -> None:
    images = [f"127.0.0.1:5000/{name}:{TAG}" for name in FUNCTIONS]
    subprocess.run(["docker", "rmi", *images], capture_output=True)
    dangling = subprocess.run(["docker", "images", "-q", "--filter", "dangling=true", "--format",
                               "{{.ID}} {{.CreatedAt}}"], capture_output=True, text=True).stdout.split("\n")
    ours = [line.split()[0] for line in dangling if line.strip()]
    mine = []
    for image in ours:  # only those this run made (created after it started)
        created = subprocess.run(["docker", "image", "inspect", "-f", "{{.Created}}", image],
                                 capture_output=True, text=True).stdout.strip()
        try:
            stamp = calendar.timegm(time.strptime(created[:19], "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            continue
        if stamp >= after - 1:
            mine.append(image)
    for _ in range(len(mine)):  # a failed build's layers are parents of one another: children go first
        mine = [image for image in mine if subprocess.run(["docker", "rmi", image], capture_output=True).returncode]
        if not mine:
            break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-arg", action="append", default=[], help="passed to faas-cli build")
    parser.add_argument("--no-cache", action="store_true", help="no layer reused, not even between the two functions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    others = subprocess.run(["docker", "ps", "-q"], capture_output=True, text=True).stdout.split()
    with tempfile.TemporaryDirectory(prefix="faasgd-cold-build-") as folder:
        project = project_copy(Path(folder))
        load_before, started_at = os.getloadavg(), time.time()
        before = (docker_cpu_s(), daemons_cpu_s(), machine_busy_s())
        try:
            wall, steps, _ = build(project, args.build_arg, args.no_cache)
        finally:
            after = (docker_cpu_s(), daemons_cpu_s(), machine_busy_s())
            cleanup(started_at)
    row = {"wall_s": round(wall, 1), "docker_cpu_s": round(after[0] - before[0] + after[1] - before[1], 1),
           "machine_busy_cpu_s": round(after[2] - before[2], 1), "cores": os.cpu_count(),
           "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
           "other_containers": len(others), "build_args": args.build_arg, "no_cache": args.no_cache,
           "steps_s": {k: round(v, 1) for k, v in sorted(steps.items(), key=lambda kv: -kv[1])}}
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        print(f"cold build of {', '.join(FUNCTIONS)}: {row['wall_s']} s wall, {row['docker_cpu_s']} CPU-s in Docker "
              f"(machine: {row['machine_busy_cpu_s']} busy CPU-s on {row['cores']} cores, load "
              f"{row['load_before'][0]} -> {row['load_after'][0]}, {len(others)} other container(s))")
        for step, seconds in list(row["steps_s"].items())[:12]:
            print(f"  {seconds:7.1f} s  {step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
