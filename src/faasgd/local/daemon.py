"""The local runtime daemon: stores, function replicas and the gateway, in one process tree.

Started in the background by `faasgd up` as `python -m faasgd.local.daemon ...`. It starts
redis-server and memcached on free loopback ports, lays out each function's build folder, starts
the replicas with the stack's environment (store_url, local_store_url and gateway_url pointed at
this machine), serves the gateway, and records every pid in <dir>/state.json. SIGTERM stops it
all; `faasgd down` sends it and then removes whatever a crash may have left.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from faasgd import __version__
from faasgd.local.build import build_function
from faasgd.local.replicas import Supervisor
from faasgd.local.stores import start_memcached, start_redis
from faasgd.local.stack import load_stack

STATE_FILE = "state.json"


def write_state(directory: Path, state: dict) -> None:
    """Atomically replace the state file."""
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, directory / STATE_FILE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faasgd.local.daemon")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--dir", required=True, help="state, logs, build folders, secrets")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ack-wait", type=float, default=300.0)
    parser.add_argument("--upstream-timeout", type=float, default=300.0)
    parser.add_argument("--queue-workers", type=int, default=None)
    args = parser.parse_args(argv)
    from faasgd.local.gateway import GatewayOptions, LocalGateway  # the daemon's; not needed by `faasgd down`

    directory = Path(args.dir).resolve()
    logs, builds, secrets = directory / "logs", directory / "build", directory / "secrets"
    for folder in (logs, builds, secrets):
        folder.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    stack_path = Path(args.stack).resolve()
    specs = load_stack(stack_path)
    templates = stack_path.parent / "template"  # beside the stack file, else ./template as faas-cli does
    templates = templates if templates.is_dir() else Path.cwd() / "template"
    build_dirs = {name: build_function(spec, templates, builds) for name, spec in specs.items()}
    stores = [start_redis(workdir=str(directory)), start_memcached()]
    gateway_url = f"http://127.0.0.1:{args.port}"
    env = {"store_url": stores[0].url, "local_store_url": stores[1].url, "gateway_url": gateway_url,
           "FAASGD_SECRETS_DIR": str(secrets)}
    state = {"pid": os.getpid(), "version": __version__, "gateway_url": gateway_url, "stack": str(stack_path),
             "dir": str(directory), "started_at": time.time(),
             "stores": {s.name: {"url": s.url, "pid": s.pid} for s in stores}, "replicas": []}
    supervisor = Supervisor(specs, build_dirs, env, logs)
    supervisor.on_change = lambda: write_state(directory, {**state, "replicas": supervisor.processes()})
    gateway = None
    try:
        write_state(directory, state)
        supervisor.start()
        gateway = LocalGateway(supervisor, GatewayOptions(
            port=args.port, ack_wait_s=args.ack_wait, upstream_timeout_s=args.upstream_timeout,
            queue_workers=args.queue_workers, version=__version__))
        gateway.start()
        write_state(directory, {**state, "replicas": supervisor.processes(), "ready": True})
        print(f"faasgd runtime ready: gateway {gateway_url}, redis {stores[0].url}, memcached {stores[1].url}",
              flush=True)
        stop.wait()
    finally:
        if gateway is not None:
            gateway.stop()
        supervisor.stop()
        for server in stores:
            server.stop()
        (directory / STATE_FILE).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
