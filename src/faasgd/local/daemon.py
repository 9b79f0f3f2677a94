"""The local runtime daemon: stores, function replicas and the gateway, in one process tree.

Started in the background by `faasgd up` as `python -m faasgd.local.daemon ...`. It starts
redis-server and memcached on free loopback ports, nats-server with JetStream for the async queue
(its files in <dir>/jetstream, so queued calls outlive the daemon), lays out each function's build folder, starts
the replicas with the stack's environment in which every in-cluster Service address
(`gateway.openfaas:8080`, `redis.openfaas-fn:6379`, ...; faasgd.local.services) points at the
process playing it here, serves the gateway, and records every process (pid + create time) in
<dir>/state.json. SIGTERM stops it all; `faasgd down` sends it and then stops whatever a crash
may have left, checking each identity first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from faasgd import __version__
from faasgd.local import queue_rules, services
from faasgd.local.broker import start_nats
from faasgd.local.build import build_function
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas import Supervisor
from faasgd.local.stack import FunctionSpec, load_stack
from faasgd.local.stores import ServerProcess, start_memcached, start_redis

STATE_FILE = "state.json"
SECRETS_ENV = "FAASGD_SECRETS_DIR"  # where a replica reads its secret files (/var/openfaas/secrets on a cluster)
_STATE_LOCK = threading.Lock()  # the supervisor's thread and the gateway's scale calls both rewrite the file


def write_state(directory: Path, state: dict) -> None:
    """Atomically replace the state file."""
    tmp = directory / (STATE_FILE + ".tmp")
    with _STATE_LOCK:
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, directory / STATE_FILE)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m faasgd.local.daemon")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--dir", required=True, help="state, logs, build folders, secrets")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ack-wait", type=float, default=300.0)
    parser.add_argument("--upstream-timeout", type=float, default=300.0)
    parser.add_argument("--queue-workers", type=int, default=None)
    queue_rules.add_flags(parser)
    return parser.parse_args(argv)


def build_functions(stack_path: Path, builds: Path) -> tuple[dict[str, FunctionSpec], dict[str, Path]]:
    """The stack's functions and their build folders (templates beside the stack, else ./template)."""
    specs = load_stack(stack_path)
    templates = stack_path.parent / "template"
    templates = templates if templates.is_dir() else Path.cwd() / "template"
    return specs, {name: build_function(spec, templates, builds) for name, spec in specs.items()}


def start_stores(directory: Path) -> dict[str, ServerProcess]:
    """redis-server and memcached on free loopback ports, by name; stops the first if the second fails."""
    redis = start_redis(workdir=str(directory))
    try:
        return {"redis": redis, "memcached": start_memcached()}
    except BaseException:
        redis.stop()
        raise


def service_table(port: int, stores: dict[str, ServerProcess]) -> dict[str, str]:
    """Every in-cluster Service address -> the loopback address of what plays it here."""
    local = {"gateway": f"127.0.0.1:{port}", **{name: f"127.0.0.1:{s.port}" for name, s in stores.items()}}
    return services.addresses(local)


def point_at_local(specs: dict[str, FunctionSpec], table: dict[str, str]) -> dict[str, FunctionSpec]:
    """The specs with the Service addresses in their environment rewritten to local ones."""
    return {name: dataclasses.replace(spec, environment=services.rewrite(spec.environment, table))
            for name, spec in specs.items()}


def initial_state(args: argparse.Namespace, directory: Path, stores: dict[str, ServerProcess],
                  table: dict[str, str]) -> dict:
    """What state.json holds before the replicas start (`faasgd up`/`down` and the CLI read it)."""
    return {**ProcessRef.of(os.getpid()).to_json(), "version": __version__,
            "gateway_url": f"http://127.0.0.1:{args.port}", "stack": str(Path(args.stack).resolve()),
            "dir": str(directory), "started_at": time.time(),
            "stores": {name: {"url": s.url, **s.ref.to_json()} for name, s in stores.items()},
            "services": table, "replicas": []}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    directory = Path(args.dir).resolve()
    for folder in ("logs", "build", "secrets"):
        (directory / folder).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    specs, build_dirs = build_functions(Path(args.stack).resolve(), directory / "build")
    stores = start_stores(directory)
    try:
        broker = start_nats(directory / "jetstream")
    except BaseException:
        for server in stores.values():
            server.stop()
        raise
    try:
        serve(args, directory, specs, build_dirs, stores, stop, broker)
    finally:
        for server in [*stores.values(), broker]:
            server.stop()
        (directory / STATE_FILE).unlink(missing_ok=True)
    return 0


def serve(args: argparse.Namespace, directory: Path, specs: dict[str, FunctionSpec], build_dirs: dict[str, Path],
          stores: dict[str, ServerProcess], stop: threading.Event, broker: ServerProcess) -> None:
    """Start the replicas and the gateway, keep state.json current, and run until `stop` is set."""
    from faasgd.local.gateway import GatewayOptions, LocalGateway  # the daemon's; not needed by `faasgd down`
    from faasgd.local.gateway.queue_jetstream import JetStreamBroker

    table = service_table(args.port, stores)
    state = initial_state(args, directory, stores, table)
    delivery = queue_rules.from_flags(args)
    state.update(broker={"url": broker.url, "store_dir": broker.workdir, **broker.ref.to_json()},
                 delivery=delivery.to_json())
    supervisor = Supervisor(point_at_local(specs, table), build_dirs, {SECRETS_ENV: str(directory / "secrets")},
                            directory / "logs")
    supervisor.on_change = lambda: write_state(directory, {**state, "replicas": supervisor.processes()})
    gateway = None
    try:
        write_state(directory, state)
        supervisor.start()
        gateway = LocalGateway(supervisor, GatewayOptions(
            port=args.port, ack_wait_s=args.ack_wait, upstream_timeout_s=args.upstream_timeout,
            queue_workers=args.queue_workers, version=__version__, delivery=delivery),
            broker=JetStreamBroker(broker.url))
        gateway.start()
        state["ready"] = True  # kept by every later rewrite (scaling, a replica replaced)
        write_state(directory, {**state, "replicas": supervisor.processes()})
        print(f"faasgd runtime ready: gateway {state['gateway_url']}, "
              + ", ".join(f"{name} {s.url}" for name, s in stores.items())
              + f", queue {broker.url} ({delivery.mode} delivery)", flush=True)
        stop.wait()
    finally:
        if gateway is not None:
            gateway.stop()
        supervisor.stop()


if __name__ == "__main__":
    sys.exit(main())
