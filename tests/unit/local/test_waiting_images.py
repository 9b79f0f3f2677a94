"""What `faasgd up --backend docker` prints and a call's 404 says when the stack's images are not there yet:
the exact export line and faas-cli command (build and push, or only deploy when the registry holds them)."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from faasgd.api import hints, jobs
from faasgd.cli import runtime as cli_runtime
from faasgd.local.lifecycle import waiting_images
from faasgd.local.processes import ProcessRef
from faasgd.openfaas import FunctionError, GatewayClient

REGISTRY = "127.0.0.1:41000"
WAITING = {"emnist-setup": {"image": "127.0.0.1:5000/emnist-setup:0.1.0"},
           "emnist-train": {"image": "127.0.0.1:5000/emnist-train:0.1.0"}}


def docker_state(waiting: dict, gateway_url: str = "http://127.0.0.1:40000") -> dict:
    return {"backend": "docker", "gateway_url": gateway_url, "registry": {"url": REGISTRY, "pid": 1},
            "waiting": waiting, "replicas": [], "stores": {}}


def test_up_prints_the_export_line_then_faas_cli_up_for_the_images_it_waits_for(capsys):
    cli_runtime.print_image_steps(docker_state(WAITING))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("waiting for their images: emnist-setup (127.0.0.1:5000/emnist-setup:0.1.0), "
                        "emnist-train (127.0.0.1:5000/emnist-train:0.1.0)")
    assert lines[2:] == [f"  export REGISTRY={REGISTRY}", "  faas-cli up -f stack.yml --filter 'emnist-*'"]


def test_up_with_nothing_waiting_still_prints_the_export_line_and_a_process_runtime_prints_none(capsys):
    cli_runtime.print_image_steps(docker_state({}))
    cli_runtime.print_image_steps({"gateway_url": "http://127.0.0.1:40000", "replicas": []})
    assert capsys.readouterr().out.splitlines()[1:] == [f"  export REGISTRY={REGISTRY}"]


def test_images_already_in_the_registry_need_only_a_deploy_and_the_message_says_why():
    waiting = {name: {**entry, "in_registry": f"{REGISTRY}/{name}:0.1.0"} for name, entry in WAITING.items()}
    message = waiting_images.not_deployed("emnist-setup", docker_state(waiting))
    assert "REGISTRY was exported after `faasgd up`, not before" in message
    assert message.endswith(f"next: export REGISTRY={REGISTRY} && faas-cli deploy -f stack.yml --filter 'emnist-*'")
    assert waiting_images.not_deployed("emnist-setup", docker_state({})) is None  # deployed since, or never named


def fake_gateway(status: int, body: dict) -> GatewayClient:
    return GatewayClient("http://127.0.0.1:40000", transport=httpx.MockTransport(
        lambda request: httpx.Response(status, json=body)))


@pytest.fixture
def runtime_dir(tmp_path):
    """A runtime folder whose state.json is this process's (read_state sees a live daemon)."""
    def write(state: dict) -> str:
        (tmp_path / "state.json").write_text(json.dumps({**ProcessRef.of(os.getpid()).to_json(), **state}))
        return str(tmp_path)
    return write


def test_a_train_against_a_docker_runtime_waiting_for_emnist_setup_says_what_is_missing_and_the_next_command(
        runtime_dir):
    directory = runtime_dir(docker_state(WAITING))
    with pytest.raises(hints.FunctionNotDeployed) as raised:
        jobs.submit(fake_gateway(404, {"error": "function not found: emnist-setup"}), {}, directory)
    message = str(raised.value)
    assert message.startswith("emnist-setup is not deployed on the local runtime (--backend docker): its image "
                              "127.0.0.1:5000/emnist-setup:0.1.0 is neither on this machine nor in the runtime's "
                              f"registry {REGISTRY}")
    assert message.endswith(f"next: export REGISTRY={REGISTRY} && faas-cli up -f stack.yml --filter 'emnist-*'")
    assert raised.value.http_status == 404


@pytest.mark.parametrize("state, status", [
    (docker_state(WAITING, gateway_url="http://127.0.0.1:49999"), 404),  # another gateway than the runtime's
    (docker_state({}), 404),  # nothing waiting: removed by hand, say only what the gateway said
    ({"gateway_url": "http://127.0.0.1:40000", "replicas": []}, 404),  # a process runtime
    (docker_state(WAITING), 500),  # not a 404
])
def test_any_other_failure_is_the_gateways_own_error(runtime_dir, state, status):
    with pytest.raises(FunctionError) as raised:
        jobs.submit(fake_gateway(status, {"error": "function not found: emnist-setup"}), {}, runtime_dir(state))
    assert type(raised.value) is FunctionError and str(raised.value) == "function not found: emnist-setup"
