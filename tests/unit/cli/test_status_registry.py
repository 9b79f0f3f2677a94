"""`faasgd status` names the container backend's registry (where faas-cli pushes) when the gateway it asks is the
local runtime's, and only then. In-process: the gateway answer and the runtime's state are stand-ins."""

from __future__ import annotations

from faasgd.cli import status
from faasgd.cli.main import main

URL = "http://127.0.0.1:7000"
FUNCTIONS = [{"name": "emnist-train", "replicas": 2, "availableReplicas": 2, "invocationCount": 3}]


class Answer:
    def json(self):
        return FUNCTIONS


class Client:
    def __init__(self, url: str):
        self.url = url

    def request(self, method, path, **_):
        return Answer()


def run(monkeypatch, capsys, gateway_url: str, state: dict | None) -> str:
    monkeypatch.setattr(status, "gateway", lambda args: Client(gateway_url))
    monkeypatch.setattr(status, "json_answer", lambda answer, what: answer.json())
    monkeypatch.setattr(status.control, "read_state", lambda directory: state)
    assert main(["status"]) == 0
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_the_registry_of_a_docker_runtime_is_printed(monkeypatch, capsys):
    state = {"gateway_url": URL, "backend": "docker", "registry": {"url": "127.0.0.1:5123", "pid": 1}}
    out = run(monkeypatch, capsys, URL, state)
    assert "registry 127.0.0.1:5123 (docker backend)" in out and "emnist-train" in out


def test_no_registry_line_for_a_process_runtime_or_another_gateway(monkeypatch, capsys):
    assert "registry" not in run(monkeypatch, capsys, URL, {"gateway_url": URL})
    other = {"gateway_url": "http://127.0.0.1:9999", "registry": {"url": "127.0.0.1:5123", "pid": 1}}
    assert "registry" not in run(monkeypatch, capsys, URL, other)
