"""Which way replicas run (faasgd.local.replicas.watchdog): finding fwatchdog, its version, the environment and argv a
replica gets under it, its stop grace, and a replica's health under it and bare (faasgd.local.replicas.pods). Fake
fwatchdog scripts in tmp_path; the health checks talk to small HTTP servers on loopback."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from faasgd.errors import ConfigError
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas import environment, watchdog
from faasgd.local.replicas.pods import FAILURE_THRESHOLD, Replica, readiness
from faasgd.local.replicas.stack import load_stack
from faasgd.local.replicas.watchdog import Watchdog, find
from support.paths import ROOT

PRINTS_VERSION = "#!/bin/sh\necho \"2026/11/26 11:16:53 Version: {v}\tSHA: 01c65eda\" >&2\n"


def fake_fwatchdog(folder: Path, version: str = "0.11.3", body: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fwatchdog"
    path.write_text(body if body is not None else PRINTS_VERSION.format(v=version))
    path.chmod(0o755)
    return path


@pytest.fixture
def project(tmp_path):
    """<tmp>/project/stack.yml, and <tmp>/shared/bin/ beside the project (empty)."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "stack.yml").write_text("functions: {}\n")
    (tmp_path / "shared" / "bin").mkdir(parents=True)
    return tmp_path / "project" / "stack.yml"


def test_auto_takes_the_env_var_then_path_then_shared_bin_beside_the_project(project, tmp_path):
    shared = fake_fwatchdog(tmp_path / "shared" / "bin", "0.11.1")
    on_path = fake_fwatchdog(tmp_path / "onpath", "0.11.2")
    given = fake_fwatchdog(tmp_path / "given", "0.11.3")
    environ = {"PATH": str(on_path.parent), watchdog.ENV_VAR: str(given)}
    assert find("auto", environ, project, can_unshare=True) == Watchdog(str(given), "0.11.3", "")
    assert find("auto", {"PATH": str(on_path.parent)}, project, can_unshare=True).path == str(on_path)
    found = find("auto", {"PATH": "/nonexistent"}, project, can_unshare=True)
    assert (found.path, found.version) == (str(shared), "0.11.1")
    assert found.describe() == f"replicas under of-watchdog 0.11.1 ({shared})"


def test_nothing_found_or_off_runs_bare_and_says_why(project, tmp_path):
    found = find("auto", {"PATH": "/nonexistent"}, project, can_unshare=True)
    assert not found.found
    assert found.describe() == ("replicas as bare `python index.py` (no fwatchdog found: FAASGD_WATCHDOG unset, "
                                f"none on PATH, none at {tmp_path / 'shared' / 'bin' / 'fwatchdog'})")
    fake_fwatchdog(tmp_path / "shared" / "bin")
    assert find("off", {}, project, can_unshare=True).describe().endswith("(no fwatchdog found: --watchdog off)")
    assert find("auto", {watchdog.ENV_VAR: "off"}, project, can_unshare=True).why == "FAASGD_WATCHDOG=off"


def test_a_named_watchdog_that_is_not_one_is_refused_naming_where_it_came_from(project, tmp_path):
    for choice, environ, field in (("auto", {watchdog.ENV_VAR: str(tmp_path / "missing")}, "FAASGD_WATCHDOG"),
                                   (str(tmp_path / "missing"), {}, "--watchdog"), ("", {}, "--watchdog")):
        with pytest.raises(ConfigError) as err:
            find(choice, environ, project, can_unshare=True)
        assert err.value.field == field
    not_of = fake_fwatchdog(tmp_path / "other", body="#!/bin/sh\necho hello\n")
    with pytest.raises(ConfigError, match="printed no version") as err:
        find(str(not_of), {}, project, can_unshare=True)
    assert err.value.field == "--watchdog"


def test_without_root_auto_runs_bare_and_a_named_one_is_refused(project, tmp_path):
    shared = fake_fwatchdog(tmp_path / "shared" / "bin")
    found = find("auto", {}, project, can_unshare=False)
    assert not found.found and found.why == f"{shared} found, but replicas under it need a network namespace each, so root"
    with pytest.raises(ConfigError, match="so root"):
        find(str(shared), {}, project, can_unshare=False)


def test_a_broken_binary_found_by_auto_runs_bare(project, tmp_path):
    fake_fwatchdog(tmp_path / "shared" / "bin", body="#!/bin/sh\nexit 3\n")
    found = find("auto", {}, project, can_unshare=True)
    assert not found.found and "printed no version (exit 3)" in found.why


def test_state_file_round_trip():
    for found in (Watchdog("/bin/fwatchdog", "0.11.3", ""), Watchdog(why="--watchdog off")):
        entry = found.to_json()
        assert entry["describe"] == found.describe() and Watchdog.from_json(entry) == found
    assert Watchdog.from_json(None) is None and Watchdog.from_json("x") is None


def test_a_replica_under_the_watchdog_gets_its_port_a_second_upstream_and_fprocess_over_every_layer():
    spec = load_stack(ROOT / "stack.yml", env={})["emnist-train"]
    spec = replace(spec, env_process="python index.py")
    env = environment.container_env(
        environment.basics({"PATH": "/usr/bin"}, "/rt/replicas/emnist-train-1/tmp"),
        {"mode": "http", "upstream_url": "http://127.0.0.1:5000", "fprocess": "python index.py"},
        environment.function_env(spec, {}), environment.replica_env(45001, "emnist-train-1", "/s"),
        watchdog.replica_env(45001, 45002, "/proc/7/ns/net"))
    assert env["port"] == "45001" and env["upstream_url"] == "http://127.0.0.1:45002"
    assert env["fprocess"] == f"{sys.executable} -S {watchdog.LAUNCHER} enter /proc/7/ns/net {sys.executable} index.py"
    assert env["mode"] == "http" and env["healthcheck_interval"] == "5s" and env["suppress_lock"] == "true"
    argv = watchdog.command(Watchdog("/x/fwatchdog", "0.11.3", ""), 45001)
    assert argv[1:5] == ["-S", str(watchdog.LAUNCHER), "serve", "45001"] and watchdog.LAUNCHER.is_file()
    assert argv[5:] == [sys.executable, "-S", "bootstrap.py", "/x/fwatchdog"]


@pytest.mark.parametrize("env, grace", [({"healthcheck_interval": "5s"}, 10.0), ({"healthcheck_interval": "2"}, 7.0),
                                        ({"write_timeout": "3s"}, 8.0), ({}, watchdog.MAX_GRACE_S),
                                        ({"healthcheck_interval": "1m"}, watchdog.MAX_GRACE_S),
                                        ({"healthcheck_interval": "soon", "write_timeout": "4s"}, 9.0)])
def test_stop_grace_is_the_watchdogs_healthcheck_interval_and_a_margin_capped(env, grace):
    assert watchdog.stop_grace_s(env) == grace


class Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):
        self.send_response(self.status if self.path == "/_/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def replica(tmp_path):
    """A Replica around a live `sleep` (its port set by each test); stopped afterwards."""
    popen = subprocess.Popen(["sleep", "30"])
    made = Replica("f", "f-1", 0, popen, ProcessRef.of(popen.pid), tmp_path / "f-1.log", tmp_path / "f-1")
    yield made
    made.stop()


def serve(status: int) -> http.server.HTTPServer:
    server = http.server.HTTPServer(("127.0.0.1", 0), type("H", (Health,), {"status": status}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("status, healthy", [(200, True), (503, False)])
def test_under_the_watchdog_health_is_its_health_route(replica, status, healthy):
    server = serve(status)
    try:
        replica.port, replica.watched = server.server_address[1], True
        assert replica.check_health() is healthy
        replica.watched = False  # bare: a listening port is enough, whatever it answers
        assert replica.check_health() is True
    finally:
        server.shutdown()
        server.server_close()
    replica.watched = True  # nothing listens any more: a serving replica leaves the routing at the third failed probe
    assert [replica.check_health() for _ in range(FAILURE_THRESHOLD)] == [True] * (FAILURE_THRESHOLD - 1) + [False]


def test_readiness_is_faas_netes_probe_a_new_replica_serves_at_once_a_serving_one_leaves_after_three_failures():
    assert readiness(False, 0, True) == (True, 0)  # first answered probe
    assert readiness(False, 0, False) == (False, 1)  # not yet serving: stays out
    assert readiness(True, 0, False) == (True, 1) and readiness(True, 1, False) == (True, 2)
    assert readiness(True, 2, False) == (False, 3)
    assert readiness(True, 2, True) == (True, 0)  # an answer in between resets the count


def test_a_dead_replica_is_never_healthy(replica):
    server = serve(200)
    try:
        replica.port, replica.watched = server.server_address[1], True
        replica.popen.kill()
        replica.popen.wait()
        assert replica.check_health() is False
    finally:
        server.shutdown()
        server.server_close()
