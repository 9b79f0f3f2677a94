"""`faasgd status` and `faasgd up` say how the local runtime runs its replicas, read from its state file, and
only for that runtime's gateway. A state file in tmp_path naming this test's own process as the daemon."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from faasgd.cli.runtime import watchdog_line
from faasgd.cli.status import local_watchdog_line
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas.watchdog import Watchdog

URL = "http://127.0.0.1:31112"


def write_state(folder, **extra) -> SimpleNamespace:
    state = {**ProcessRef.of(os.getpid()).to_json(), "gateway_url": URL, "dir": str(folder), **extra}
    (folder / "state.json").write_text(json.dumps(state))
    return SimpleNamespace(dir=str(folder))


def test_the_local_runtimes_gateway_gets_the_line_from_its_state(tmp_path):
    under = Watchdog("/opt/fwatchdog", "0.11.3", "")
    args = write_state(tmp_path, watchdog=under.to_json())
    assert local_watchdog_line(args, URL + "/") == "replicas under of-watchdog 0.11.3 (/opt/fwatchdog)"
    assert local_watchdog_line(args, "http://127.0.0.1:8080") is None  # another gateway: its replicas are pods
    bare = Watchdog(why="--watchdog off")
    args = write_state(tmp_path, watchdog=bare.to_json())
    assert local_watchdog_line(args, URL) == "replicas as bare `python index.py` (no fwatchdog found: --watchdog off)"


def test_no_runtime_or_a_state_without_the_entry_says_nothing(tmp_path):
    assert local_watchdog_line(SimpleNamespace(dir=str(tmp_path)), URL) is None
    assert local_watchdog_line(write_state(tmp_path), URL) is None
    assert watchdog_line(None) is None and watchdog_line({"watchdog": "garbage"}) is None
