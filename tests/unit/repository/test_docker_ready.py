"""tests/support/docker_ready.py: the Docker tests run when a daemon answers, else skip with ensure-docker.sh's
reason (or what `docker info` said when that script did not run)."""

from __future__ import annotations

import pytest

from support.docker_ready import unavailable_reason


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """A stand-in docker client on an otherwise empty PATH; `answer(code, stderr)` sets what `docker info` does."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))

    def answer(code: int, stderr: str = "") -> None:
        client = folder / "docker"
        client.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit {code}\n")
        client.chmod(0o755)
    return answer


def test_a_daemon_that_answers_means_no_reason(docker, tmp_path):
    docker(0)
    (tmp_path / "reason").write_text("stale reason\n")
    assert unavailable_reason(tmp_path / "reason") is None


def test_the_reason_ensure_docker_wrote_is_the_skip_reason(docker, tmp_path):
    docker(1, "Cannot connect to the Docker daemon")
    (tmp_path / "reason").write_text("dockerd exited: failed to start daemon: no iptables\n")
    assert unavailable_reason(tmp_path / "reason") == \
        "Docker tests skipped: dockerd exited: failed to start daemon: no iptables"


def test_without_a_written_reason_docker_infos_own_words_are_given(docker, tmp_path):
    docker(1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
    reason = unavailable_reason(tmp_path / "absent")
    assert reason.endswith("(Cannot connect to the Docker daemon at unix:///var/run/docker.sock)")


def test_no_client_at_all(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "no docker client on PATH" in unavailable_reason(tmp_path / "absent")
