"""The local runtime daemon: stores, function replicas and the gateway, in one process tree.

Started in the background by `faasgd up` as `python -m faasgd.local.lifecycle.daemon ...`. It reads (or generates)
the gateway's login in <dir>/secrets, starts redis-server, memcached and nats-server with JetStream (its files in
<dir>/jetstream: queued calls outlive the daemon), lays out each function's build folder, deploys the stack's
functions (faasgd.local.replicas.environment points their Service addresses here), serves the gateway on 127.0.0.1
(port 0: a free one), starts an S3 server when a function asks for one (faasgd.local.services.s3), a Redis Cluster
and a memcached pool when the stack names them or `--stores` asks (faasgd.local.services.stack_groups,
optional_stores), and records every process (pid + create time) in <dir>/state.json. SIGTERM stops it all; `faasgd down` sends it, then stops what a crash left, checking identities.
"""
from __future__ import annotations

import sys

# httpx's command-line client (httpx._main: rich, click, pygments; ~30 ms of the start `faasgd up` waits for) is
# never run here; httpx imports it inside `try: ... except ImportError`: None in sys.modules fails that at once
sys.modules.setdefault("httpx._main", None)

import argparse
import dataclasses
import json
import logging
import os
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping

from faasgd import __version__, cpu_limit
from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import processes
from faasgd.local.lifecycle import credentials
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.lifecycle.runtime_state import RuntimeState, initial_state
from faasgd.local.lifecycle.state_file import STATE_FILE, TEMP_FOLDER, make_folders, source_sha, write_ended
from faasgd.local.nodes import cluster
from faasgd.local.queue import rules
from faasgd.local.replicas import environment, watchdog, zygote
from faasgd.local.replicas.build import build_function, template_fprocess
from faasgd.local.replicas.deployments import Catalog, Code
from faasgd.local.replicas.dockerfile import image_env
from faasgd.local.replicas.pods import Host, start_replica
from faasgd.local.replicas.stack import load_stack
from faasgd.local.replicas.supervisor import Supervisor
from faasgd.local.services import dns, optional_stores, stack_groups
from faasgd.local.services.broker import jetstream_answers, start_nats
from faasgd.local.services.broker_watch import BrokerWatch
from faasgd.local.services.docker_site import DockerSite
from faasgd.local.services.s3 import LocalS3
from faasgd.local.services.secrets import SecretStore
from faasgd.local.services.store_groups import ServerGroup
from faasgd.local.services.stores import (LOOPBACK, STORE_ANSWERS, ServerProcess, adopt_server, free_port,
                                          start_memcached, start_redis, stop_all)

# At stop, calls in flight get this long to end before the gateway stops (an idle replica is killed at once, a busy
# one drains for 5 s): `faasgd train` stops its runtime right after the job, with the queue's reports (~70 ms each)
STOP_SETTLE_S = 0.5  # of the workers' calls still reaching emnist-setup
ZYGOTE_STOP_S = 5.0  # it kills its function processes at SIGTERM and reaps them: milliseconds


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m faasgd.local.lifecycle.daemon")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--dir", required=True, help="state, logs, build folders, secrets")
    for flag, kind, default in (("--port", int, 8080), ("--ack-wait", float, 300.0),
                                ("--upstream-timeout", float, 300.0), ("--queue-workers", int, None)):
        parser.add_argument(flag, type=kind, default=default)
    parser.add_argument("--backend", choices=("process", "docker"), default="process",
                        help="replicas as processes, or as containers of their images (faasgd.local.services.docker_site)")
    parser.add_argument("--watchdog", default="auto", help="auto, off or fwatchdog's path (faasgd.local.replicas.watchdog)")
    parser.add_argument("--filter", default="*", help="deploy only the stack's functions matching this wildcard")
    parser.add_argument("--found-watchdog", type=json.loads, default=None,
                        help="JSON: what `faasgd up` found for --watchdog (faasgd.local.replicas.watchdog.Watchdog), not asked again")
    parser.add_argument("--adopt", type=json.loads, default={},
                        help="JSON: the stores and broker a crashed runtime left running, to keep (faasgd up)")
    parser.add_argument("--redis-cluster-masters", type=int, default=stack_groups.DEFAULT_MASTERS,
                        help="a Redis Cluster's masters, when the stack names one (faasgd.local.services.stack_groups)")
    parser.add_argument("--redis-cluster-replicas", type=int, default=0, help="its replicas per master")
    parser.add_argument("--memcached-pool-servers", type=int, default=None,
                        help="a memcached pool's servers, when the stack names one (default: as many as it names)")
    parser.add_argument("--stores", type=optional_stores.parse, default=(),
                        help="optional stores to start and give every function (faasgd.local.services.optional_stores)")
    for flag, kind, default in (("--nodes", int, 1), ("--node-link", str, None), ("--placement", str, "affinity")):
        parser.add_argument(flag, type=kind, default=default, help="emulated nodes (faasgd.local.nodes)")
    rules.add_flags(parser)
    return parser.parse_args(argv)


def group_plan(options: UpOptions, catalog: Catalog) -> stack_groups.GroupPlan:
    """The store groups the functions deployed at start name (faasgd.local.services.stack_groups), sized by the
    options."""
    deployed = catalog.stack_deployments(time.time(), options.only).values()
    asked = {optional_stores.STORES_KEY: optional_stores.entries(options.stores, options.groups.pool_servers)}
    return stack_groups.plan([*(d.spec.environment for d in deployed), asked], options.groups)


def build_catalog(stack_path: Path, builds: Path, environ: Mapping[str, str]) -> Catalog:
    """The stack's functions, each with its build folder (templates beside the stack, else ./template),
    the template's fprocess (as `faas-cli deploy -f` sends it) and the ENV of its Dockerfile."""
    templates = stack_path.parent / "template"
    templates = templates if templates.is_dir() else Path.cwd() / "template"
    base = {"PATH": environment.basics(environ, "")["PATH"]}
    codes = []
    for spec in load_stack(stack_path).values():
        folder = build_function(spec, templates, builds)
        dockerfile = folder / "Dockerfile"
        codes.append(Code(dataclasses.replace(spec, env_process=template_fprocess(folder)), folder,
                          image_env(dockerfile, base) if dockerfile.is_file() else {}))
    return Catalog(codes)


def start_servers(directory: Path, adopted: Mapping[str, dict] | None = None, also_bind: str | None = None,
                  groups: stack_groups.GroupPlan = stack_groups.GroupPlan(), password: str | None = None,
                  net: cluster.Nodes | None = None) -> tuple[dict[str, ServerProcess], ServerProcess, dict[str, ServerGroup]]:
    """redis-server and memcached on free loopback ports, by name, nats-server for the async queue, and the
    store groups of `groups` (faasgd.local.services.stack_groups), all started at once; if one fails, those started are
    stopped and its error raised. Returns (stores, broker, groups by name).

    A server in `adopted` (state-file entries a crashed runtime left, see control.up) is kept, data
    and all, when it is still that process and answers; otherwise it is stopped and started afresh.
    Groups are always started afresh (control._leftovers stopped a crashed runtime's members). Redis and the Redis
    Cluster require `password` when given (credentials.store_password); memcached takes none (no client sends one).
    With emulated nodes `net`, the stores start in them (faasgd.local.nodes.cluster), never adopted.
    """
    adopted = adopted or {}
    redis = lambda: start_redis(workdir=str(directory), also_bind=also_bind, password=password)  # noqa: E731
    starters = {"redis": (redis, STORE_ANSWERS["redis"]),
                "memcached": (lambda: start_memcached(also_bind=also_bind), STORE_ANSWERS["memcached"]),
                "nats": (lambda: start_nats(directory / "jetstream"), jetstream_answers),
                **{name: (launch, None) for name, launch in stack_groups.starters(groups, also_bind, password).items()}}
    if net is not None:
        starters.update({name: (launch, None) for name, launch in cluster.store_starters(net, directory, password,
                                                                                          groups).items()})
    started: dict[str, ServerProcess | ServerGroup] = {}
    failed: list[BaseException] = []

    def start(name: str) -> None:
        launch, answers = starters[name]
        try:
            started[name] = (answers and _adopt(name, adopted.get(name), answers)) or launch()
        except BaseException as error:  # re-raised below, in the daemon's thread
            failed.append(error)
    threads = [threading.Thread(target=start, args=(name,), name=f"faasgd-start-{name}") for name in starters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        stop_servers(list(started.values()))
        raise failed[0]
    broker = started.pop("nats")
    started_groups = {name: started.pop(name) for name in list(started) if isinstance(started[name], ServerGroup)}
    return started, broker, started_groups


def _adopt(name: str, entry: dict | None, answers) -> ServerProcess | None:
    ref = processes.ProcessRef.from_json(entry)
    if ref is None:
        return None
    server = adopt_server(name, str(entry.get("url", "")), ref, answers, entry.get("store_dir"))
    if server is None:
        processes.stop(ref)  # ours, but silent: start afresh
    else:
        print(f"faasgd runtime: kept {name} {server.url} (pid {server.pid}) from the runtime before", flush=True)
    return server


def stop_servers(servers: list[ServerProcess | ServerGroup]) -> None:
    """Stop the stores, the store groups and the broker all at once."""
    stop_all(servers)


def service_table(port: int, stores: dict[str, ServerProcess], groups: Mapping[str, ServerGroup] | None = None,
                  host: str = LOOPBACK) -> dict[str, str]:
    """Every in-cluster Service address -> the address on `host` of what plays it here (the store groups'
    Services only when they run)."""
    groups = groups or {}
    local = {"gateway": f"{host}:{port}", **{name: f"{host if s.host == LOOPBACK else s.host}:{s.port}"
                                             for name, s in stores.items()},
             **stack_groups.players(groups, host)}
    return dns.addresses(local, [*dns.SERVICES, *stack_groups.group_services(groups)])


@dataclasses.dataclass(frozen=True)
class Started:
    """What `run` started before the replicas and the gateway, for `serve`; `run` stops it after."""

    login: credentials.Login  # the gateway's, for /system
    listener: socket.socket  # the gateway's port, taken first
    found: watchdog.Watchdog  # how process replicas run: under of-watchdog, or bare
    stores: dict[str, ServerProcess]  # redis, memcached
    broker: ServerProcess  # nats-server
    groups: dict[str, ServerGroup]  # a Redis Cluster, a memcached pool
    s3: LocalS3  # started when a function asks for S3
    site: DockerSite | None = None  # --backend docker: the network, the registry
    forks: zygote.Keeper | None = None  # the function processes' zygote
    net: cluster.Nodes | None = None  # emulated nodes (faasgd.local.nodes)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per proxied request is the queue's to say
    directory = Path(args.dir).resolve()
    make_folders(directory)
    try:
        return run(UpOptions.from_args(args), args.found_watchdog, args.adopt)
    except FaasgdError as error:  # a refusal with its reason (a disk too small for the queue, a stack's error)
        logging.getLogger("faasgd.daemon").exception("the runtime ends")
        write_ended(directory, str(error))
        return 1


def run(options: UpOptions, found: dict | None = None, adopted: Mapping[str, dict] | None = None) -> int:
    """Start everything and serve until stopped (main's body once the folders exist). `found`: what `faasgd up`
    found for the watchdog (not asked again); `adopted`: the stores and broker a crashed runtime left (control.up)."""
    directory = Path(options.directory).resolve()
    options = dataclasses.replace(options, port=options.port or free_port())
    adopted = adopted or {}
    login, _ = credentials.ensure(directory / "secrets")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    catalog = build_catalog(Path(options.stack).resolve(), directory / "build", os.environ)
    found = watchdog.Watchdog.from_json(found) or watchdog.find(options.watchdog, os.environ, Path(options.stack))
    from faasgd.local.gateway.server import listen  # the daemon's; not needed by `faasgd down`

    # the gateway's port is taken first: a store, the broker or a replica picking a free port after it cannot
    # pick this one (CI saw the gateway's bind fail with "Address already in use" once)
    listener = listen("127.0.0.1", options.port)
    if options.nodes > 1 and options.backend == "process" and not found.found:  # a function enters its node from
        raise ConfigError("--nodes", f"replicas on emulated nodes run under of-watchdog: {found.why}")  # fprocess
    site = DockerSite(directory) if options.backend == "docker" else None
    net: cluster.Nodes | None = None
    # started when a function asks for S3; under docker on the network's gateway address, where containers reach it
    s3 = LocalS3(SecretStore(directory / "secrets"), adopted.get("s3"), site.gateway_ip if site else LOOPBACK,
                 every_function=optional_stores.S3 in options.stores,  # `faasgd up --stores s3`: S3 for every function
                 dynamodb_every_function=optional_stores.DYNAMODB in options.stores)  # and DynamoDB's tables
    # the function processes fork from it (local/replicas/zygote.py); its imports run beside the rest of this start
    forks = zygote.Keeper(directory, os.environ) if site is None and found.found and zygote.wanted(os.environ) else None
    # every server started from here on keeps its files in <dir>/tmp (restored at the end: tests call main in theirs)
    machine_tmp, tempfile.tempdir = tempfile.tempdir, str(directory / TEMP_FOLDER)
    try:
        net = cluster.create(options, directory, site)
        password = credentials.store_password(directory / "secrets", generate=site is not None)  # docker: made if absent
        stores, broker, groups = start_servers(directory, adopted, site.gateway_ip if site else None,
                                               group_plan(options, catalog), password, net)
        try:
            serve(options, catalog, Started(login, listener, found, stores, broker, groups, s3, site, forks, net), stop)
        finally:
            stop_servers([*stores.values(), broker, *groups.values()])
            (directory / STATE_FILE).unlink(missing_ok=True)
    finally:
        if forks is not None:  # after the replicas: it kills and reaps any function process left
            forks.stop(ZYGOTE_STOP_S)
        s3.stop()
        listener.close()
        cluster.take_down(site, net)  # the containers, then the nodes and what still runs inside them
        tempfile.tempdir = machine_tmp
    return 0


def serve(options: UpOptions, catalog: Catalog, started: Started, stop: threading.Event) -> None:
    """Start the replicas and the gateway (on the socket `run` took first), keep state.json current, and run until
    `stop` is set. A replica of a function asking for S3 gets it from `started.s3`. With a DockerSite the replicas
    are containers on its network, and the gateway also listens on the network's gateway address."""
    from faasgd.local.gateway import GatewayOptions, LocalGateway  # the daemon's; not needed by `faasgd down`
    from faasgd.local.gateway.server import listen
    from faasgd.local.queue.jetstream import JetStreamBroker

    directory, site, forks, broker = Path(options.directory).resolve(), started.site, started.forks, started.broker
    table = service_table(options.port, started.stores, started.groups)
    runtime = RuntimeState(directory, initial_state(options, directory, started.stores, table, started.groups), table)
    started.s3.attach(runtime.record_s3)
    runtime.update(broker={"url": broker.url, "store_dir": broker.workdir, **broker.ref.to_json()},
                   delivery=options.delivery.to_json())
    if site is not None:
        runtime.update(**site.state())
        runtime.table = table = service_table(options.port, started.stores, started.groups, site.gateway_ip)
        catalog = site.catalog(catalog)
    else:  # containers run their image's own of-watchdog; processes run under this one, or bare
        runtime.update(watchdog=started.found.to_json())
        if forks is not None:  # `faasgd down` after a crash stops it (and so the function processes) by its identity
            runtime.update(zygote=processes.ProcessRef.of(forks.popen.pid).to_json())
        print(f"faasgd runtime: {started.found.describe()}", flush=True)
    forked = forks is not None and zygote.wait_listening(forks.popen, forks.path)  # bound long since, normally
    host = Host(directory, SecretStore(directory / "secrets"), table, dict(os.environ), started.found,
                forks.path if forked else None, cpu_limit.read_limit().usable)
    seats = None if started.net is None else cluster.Seats.of(started.net, options, started.stores)
    if seats is not None:
        runtime.update(**seats.state_entries(runtime.state["stores"]))
    supervisor = Supervisor(catalog.stack_deployments(time.time(), options.only), catalog, host,
                            spawn=optional_stores.spawner(started.s3.spawner(site.spawn if site else start_replica),
                                                          options.stores, options.groups.pool_servers), seat=seats)
    if site is not None:  # the stack's functions whose images are not here yet (faasgd up and faasgd train say so)
        runtime.update(waiting=dict(catalog.waiting))
    watch = BrokerWatch(broker, on_restart=runtime.broker_restarted)
    gateway = None
    try:
        runtime.write()
        runtime.attach(supervisor)
        watch.start()
        if forked:  # a zygote that ends is reaped and started again; `faasgd down` after a crash finds the new one
            forks.on_restart = runtime.zygote_restarted
            forks.watch()
        gateway = LocalGateway(supervisor, GatewayOptions(
            port=options.port, ack_wait_s=options.ack_wait_s, upstream_timeout_s=options.upstream_timeout_s,
            queue_workers=options.queue_workers, version=__version__, delivery=options.delivery, sha=source_sha(),
            basic_auth=started.login, secrets_dir=str(directory / "secrets")),
            broker=JetStreamBroker(broker.url))
        gateway.start(started.listener, (listen(site.gateway_ip, options.port),) if site is not None else
                      (listen(started.net.gateway, options.port),) if started.net is not None else ())
        # the replicas start once the gateway serves (their imports would slow its start on a small machine);
        # `up` returns at "ready", and a call for a function whose replicas are still starting waits for one
        if forks is not None:
            zygote.hurry(forks.popen)  # the replicas ask it now: off SCHED_IDLE
        supervisor.start(ready_timeout_s=None)
        runtime.ready()
        print(f"faasgd runtime ready: gateway {runtime.state['gateway_url']}, "
              + ", ".join(f"{name} {s.url}" for name, s in [*started.stores.items(), *started.groups.items()])
              + f", queue {broker.url} ({options.delivery.mode} delivery)", flush=True)
        stop.wait()
    finally:
        busy = gateway.busy_replicas(STOP_SETTLE_S) if gateway is not None else None
        if gateway is not None:
            gateway.stop()
        watch.stop()
        supervisor.stop(busy)


def exit_at_once(code: int) -> None:
    """End the process once `main` has stopped everything, without the interpreter's teardown (0.05-0.1 s on
    `faasgd down`'s path): the log pumps are daemon threads, not waited for either way, and each server's stop
    removed its temp folder. Logging and stdio are flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_at_once(main())
