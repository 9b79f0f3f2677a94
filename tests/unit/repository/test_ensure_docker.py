"""scripts/ensure-docker.sh's decisions, run against a fake PATH: stand-ins for docker, dockerd, apt-get, id and
the Debian tools record their calls, so each case shows what the script installs, starts and builds, and why it
gives up (its reason in the file the Docker tests read), without touching the machine's Docker."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT

SCRIPT = ROOT / "scripts" / "ensure-docker.sh"
UTILITIES = ("bash", "dirname", "mkdir", "rm", "tail", "sleep", "setsid", "cat", "tr", "touch", "grep")
IMAGES = ("python:3.11-slim-bookworm", "ghcr.io/openfaas/of-watchdog:0.11.3")

DOCKER = """#!/usr/bin/env bash
echo "docker $*" >>"$FAKE/calls"
case "$1" in
  info) [ -f "$FAKE/daemon-up" ] ;;
  image) [ -f "$FAKE/image-$(echo "$3" | tr '/:' '__')" ] ;;
esac
"""
DOCKERD = {  # how the stand-in dockerd behaves
    "up": 'echo dockerd >>"$FAKE/calls"; touch "$FAKE/daemon-up"',
    "fails": 'echo dockerd >>"$FAKE/calls"; echo "failed to start daemon: no iptables"; exit 1',
    "silent": 'echo dockerd >>"$FAKE/calls"; sleep 3',
}
RECORD = '#!/usr/bin/env bash\necho "$(basename "$0") $*" >>"$FAKE/calls"\n'
BASE_IMAGES = """#!/usr/bin/env bash
echo "base-images" >>"$FAKE/calls"
touch "$FAKE/image-python_3.11-slim-bookworm" "$FAKE/image-ghcr.io_openfaas_of-watchdog_0.11.3"
"""


class Machine:
    """A fake PATH and what ran on it."""

    def __init__(self, root: Path):
        self.root, self.bin = root, root / "bin"
        self.bin.mkdir()
        for name in UTILITIES:
            os.symlink(shutil.which(name), self.bin / name)
        self.tool("docker", DOCKER)
        self.tool("id", '#!/usr/bin/env bash\necho "${FAKE_UID:-0}"\n')
        self.tool("apt-get", RECORD.replace("$(basename \"$0\")", "apt-get"))
        self.base_images = root / "local-base-images.sh"
        self.base_images.write_text(BASE_IMAGES)
        self.base_images.chmod(0o755)
        self.reason = root / "build" / "docker-unavailable"

    def tool(self, name: str, body: str) -> None:
        (self.bin / name).write_text(body if body.startswith("#!") else f"#!/usr/bin/env bash\n{body}\n")
        (self.bin / name).chmod(0o755)

    def has(self, *names: str) -> "Machine":
        for name in names:
            self.tool(name, "exit 0")
        return self

    def state(self, *flags: str) -> "Machine":
        for flag in flags:
            (self.root / flag).touch()
        return self

    def images_present(self) -> "Machine":
        return self.state(*(f"image-{image.replace('/', '_').replace(':', '_')}" for image in IMAGES))

    # wait_s: how long the script waits for a started dockerd (a fake one under load may take seconds to start)
    def run(self, uid: int = 0, wait_s: int = 20) -> subprocess.CompletedProcess:
        env = {"PATH": str(self.bin), "SBIN_DIRS": "", "FAKE": str(self.root), "FAKE_UID": str(uid),
               "DOCKERD_LOG": str(self.root / "dockerd.log"), "DOCKERD_WAIT_S": str(wait_s),
               "DOCKER_UNAVAILABLE": str(self.reason), "BASE_IMAGES_SCRIPT": str(self.base_images)}
        return subprocess.run([str(self.bin / "bash"), str(SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=60)

    def calls(self) -> list[str]:
        path = self.root / "calls"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def test_everything_present_costs_a_few_docker_calls_and_nothing_else(machine):
    machine.has("dockerd", "debootstrap", "docker-registry").state("daemon-up").images_present()
    machine.reason.parent.mkdir()  # a reason left by an earlier run without Docker is cleared
    machine.reason.write_text("old reason\n")
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert machine.calls() == ["docker info", *(f"docker image inspect {image}" for image in IMAGES)]
    assert not machine.reason.exists()


def test_missing_packages_are_installed_as_root_and_only_those(machine):
    machine.has("dockerd").state("daemon-up").images_present()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "apt-get install -y -q debootstrap docker-registry" in machine.calls()
    assert not machine.reason.exists()


def test_without_root_the_missing_packages_are_named_and_the_docker_tests_skip(machine):
    done = machine.run(uid=1000)
    assert done.returncode == 0
    assert "sudo apt-get install -y docker.io debootstrap docker-registry" in done.stderr
    assert not [call for call in machine.calls() if call.startswith("apt-get")]
    assert "docker.io is not installed" in machine.reason.read_text()


def test_a_silent_machine_gets_dockerd_started_and_then_the_missing_base_images(machine):
    machine.has("debootstrap", "docker-registry").tool("dockerd", DOCKERD["up"])
    done = machine.run()
    assert done.returncode == 0, done.stderr
    calls = machine.calls()
    assert "base-images" in calls, machine.reason.read_text() if machine.reason.exists() else calls
    assert calls.index("dockerd") < calls.index("base-images")
    assert calls.count("base-images") == 1  # one build makes both images
    assert not machine.reason.exists()


def test_a_daemon_up_by_the_time_its_starter_exits_is_taken_as_up(machine):
    # the order a CI run hit: `docker info` finds no daemon, then dockerd comes up and its process exits before the
    # script looks at it; the script must look at the daemon again before it calls the exit a failure
    machine.has("debootstrap", "docker-registry")
    machine.tool("docker", """#!/usr/bin/env bash
case "$1" in
  info) [ -f "$FAKE/daemon-up" ]; up=$?
        echo "docker info" >>"$FAKE/calls"
        [ "$up" -ne 0 ] && [ "$(grep -c 'docker info' "$FAKE/calls")" -eq 2 ] && sleep 1  # dockerd ends meanwhile
        exit "$up" ;;
  image) echo "docker $*" >>"$FAKE/calls"; [ -f "$FAKE/image-$(echo "$3" | tr '/:' '__')" ] ;;
esac
""")
    machine.tool("dockerd", 'until [ "$(grep -c "docker info" "$FAKE/calls")" -ge 2 ]; do sleep 0.05; done\n'
                            'echo dockerd >>"$FAKE/calls"; touch "$FAKE/daemon-up"')
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert not machine.reason.exists(), machine.reason.read_text()
    assert machine.calls().count("base-images") == 1


def test_dockerd_that_exits_gives_its_last_line_as_the_reason(machine):
    machine.has("debootstrap", "docker-registry").tool("dockerd", DOCKERD["fails"])
    done = machine.run()
    assert done.returncode == 0
    assert machine.reason.read_text().strip() == "dockerd exited: failed to start daemon: no iptables"
    assert "base-images" not in machine.calls()


def test_dockerd_that_never_answers_is_given_up_on_after_the_wait(machine):
    machine.has("debootstrap", "docker-registry").tool("dockerd", DOCKERD["silent"])
    done = machine.run(wait_s=1)
    assert done.returncode == 0
    assert "did not answer within 1s" in machine.reason.read_text()


def test_without_root_no_daemon_is_started(machine):
    machine.has("debootstrap", "docker-registry").tool("dockerd", DOCKERD["up"])
    done = machine.run(uid=1000)
    assert done.returncode == 0
    assert "dockerd" not in machine.calls()
    assert "needs root" in machine.reason.read_text()


def test_a_failed_base_image_build_is_a_reason_not_a_failure(machine):
    machine.has("dockerd", "debootstrap", "docker-registry").state("daemon-up")
    machine.base_images.write_text('#!/usr/bin/env bash\necho "debootstrap: no mirror" >&2\nexit 1\n')
    done = machine.run()
    assert done.returncode == 0
    assert "base images are missing" in machine.reason.read_text()
