"""What the running daemon says in state.json, kept by one object the services tell when they change.

    state = RuntimeState(directory, initial_state(options, directory, stores, table, groups), table)
    state.attach(supervisor)          # from here each write adds the replicas (replica_entries)
    s3.attach(state.record_s3)        # an S3 server started for a replica: its address and process
    BrokerWatch(broker, on_restart=state.broker_restarted)

The service table (in-cluster Service address -> the local one) is the very dict the replicas' Host reads, so a
replica started after S3 came up finds it. Every change is made under STATE_LOCK, so a rewrite of the file by the
supervisor's thread never sees it half-changed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from faasgd import __version__
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.lifecycle.state_file import STATE_LOCK, write_state
from faasgd.local.processes import ProcessRef
from faasgd.local.services import optional_stores, stack_groups

if TYPE_CHECKING:
    from faasgd.local.replicas.supervisor import Supervisor
    from faasgd.local.services.store_groups import ServerGroup
    from faasgd.local.services.stores import ServerProcess


def initial_state(options: UpOptions, directory: Path, stores: Mapping[str, ServerProcess],
                  table: dict[str, str], groups: Mapping[str, ServerGroup] | None = None) -> dict:
    """What state.json holds before the replicas start (`faasgd up`/`down` and the CLI read it)."""
    return {**ProcessRef.of(os.getpid()).to_json(), "version": __version__,
            "gateway_url": f"http://127.0.0.1:{options.port}", "stack": str(Path(options.stack).resolve()),
            "dir": str(directory), "started_at": time.time(),
            "stores": {name: {"url": s.url, **s.ref.to_json()} for name, s in stores.items()},
            "store_groups": stack_groups.group_entries(groups or {}), "services": table, "replicas": [],
            optional_stores.STATE_KEY: list(options.stores)}


def replica_entries(supervisor: Supervisor) -> dict:
    """The state file's replicas (`faasgd down` stops them by pid) and whether every function's replicas are
    available (`faasgd up --wait` reads it rather than asking the gateway until it is so); under docker, the stack's
    functions still waiting for their images (a deploy ends the wait: faasgd.local.lifecycle.waiting_images)."""
    waiting = getattr(supervisor.catalog, "waiting", None)
    waiting = None if waiting is None else {n: e for n, e in waiting.items() if n not in supervisor.deployments}
    return {"replicas": supervisor.processes(), "available": supervisor.all_available(),
            **({} if waiting is None else {"waiting": waiting})}


class RuntimeState:
    """The daemon's state.json: its content, the service table in it, and the changes the services report."""

    def __init__(self, directory: Path, state: dict, table: dict[str, str]):
        self.directory, self.state, self.table = directory, state, table
        self.supervisor: Supervisor | None = None

    def update(self, **entries) -> None:
        """Entries set before the replicas start (the broker, the delivery, a docker site's, the watchdog)."""
        with STATE_LOCK:
            self.state.update(entries)

    def attach(self, supervisor: Supervisor) -> None:
        """From now on every write adds the replicas; the supervisor writes at each change of them."""
        self.supervisor = supervisor
        supervisor.on_change = self.write

    def write(self) -> None:
        replicas = replica_entries(self.supervisor) if self.supervisor is not None else {}
        write_state(self.directory, {**self.state, **replicas})

    def ready(self) -> None:
        """The gateway serves and the replicas are starting: kept by every later write."""
        self.update(ready=True)
        self.write()

    def record_s3(self, addresses: dict[str, str], entry: dict) -> None:
        """An S3 server started for a replica that asked: its Service address and its process, written with that
        replica (faasgd.local.services.s3.LocalS3.attach)."""
        with STATE_LOCK:
            self.table.update(addresses)
            self.state["stores"]["s3"] = entry

    def broker_restarted(self, broker: ServerProcess) -> None:
        """nats-server started again (faasgd.local.services.broker_watch): `faasgd down` finds the new one."""
        self.update(broker={**self.state["broker"], **broker.ref.to_json()})
        self.write()

    def zygote_restarted(self, popen: subprocess.Popen) -> None:
        """The zygote ended and was started again: `faasgd down` after a crash finds the new one."""
        self.update(zygote=ProcessRef.of(popen.pid).to_json())
        self.write()
