"""`faasgd up` and `faasgd down`: start the local runtime in the background, stop exactly it.

Everything lives in one folder (default `.faasgd/`, git-ignored): state.json (every URL, and each
process as pid + create time), logs/ (runtime and one file per replica), build/ (the functions'
build folders), secrets/ (the functions' secrets and the gateway's login, 0600), replicas/ (each
replica's secret copies and temp folder). `down` signals only processes whose pid and create time
both match the state file (faasgd.local.processes), never whatever reuses a stale pid. The
runtime's own calls to its gateway carry its login (faasgd.local.lifecycle.credentials).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import processes
from faasgd.local.lifecycle import credentials
from faasgd.local.lifecycle.options import DEFAULT_DIR, UpOptions
from faasgd.local.lifecycle.state_file import ENDED_FILE, STATE_FILE, TEMP_FOLDER, load_state, read_ended
from faasgd.local.nodes.network import parse_rate
from faasgd.local.processes import ProcessRef
from faasgd.local.services import optional_stores
from faasgd.local.services.stack_groups import GroupSizes, member_refs

# `faasgd down` and `status` import this module: what only `up` or a container runtime needs (httpx through
# faasgd.openfaas, the Docker client, the watchdog's finder) is imported where it is used.

UP_TIMEOUT_S = 90.0
DOWN_TIMEOUT_S = 20.0
POLL_S = 0.02  # how often `up` looks at the state file and the gateway


def read_state(directory: str | os.PathLike = DEFAULT_DIR) -> dict | None:
    """The running runtime's state, or None when there is none (or it died)."""
    state = load_state(Path(directory))
    return state if _daemon_alive(state) else None


def client(state: dict, timeout_s: float = 30.0):
    """A client of the runtime's gateway (a faasgd.openfaas.GatewayClient) that logs in to /system with the
    runtime's login."""
    from faasgd.openfaas import GatewayClient

    return GatewayClient(state["gateway_url"], timeout_s=timeout_s,
                         auth=credentials.read(Path(state["dir"]) / "secrets"))


def login(directory: str | os.PathLike = DEFAULT_DIR) -> tuple[credentials.Login, bool]:
    """The gateway login of the runtime in `directory`, generated if absent; (login, generated now)."""
    return credentials.ensure(Path(directory).resolve() / "secrets")


def check_stack(stack: str | os.PathLike, only: str, sizes: GroupSizes, stores: tuple[str, ...] = ()) -> None:
    """ConfigError naming the flag when --filter matches none of the stack's functions or the store groups the
    matching functions name (or `stores`, `--stores`, asks for) cannot be started as asked; the stack read once
    (~12 ms). A stack that does not load is
    refused here only with a filter to match (with "*" the daemon reads it and names what is wrong in it); the
    daemon plans the groups again from its catalog."""
    from faasgd.local.replicas.stack import load_stack
    from faasgd.local.services.stack_groups import plan

    try:
        specs = load_stack(stack)
    except ConfigError:
        if only != "*":
            raise
        return
    matching = {name: spec for name, spec in specs.items() if fnmatch.fnmatchcase(name, only)}
    if only != "*" and not matching:
        raise ConfigError("--filter", f"{only!r} matches none of the stack's functions ({', '.join(specs)})")
    asked = {optional_stores.STORES_KEY: optional_stores.entries(stores, sizes.pool_servers)}
    plan([*(spec.environment for spec in matching.values()), asked], sizes)


def serving(state: dict | None) -> bool:
    """The runtime is ready and its gateway answers /healthz: calls are taken (one for a function whose
    replicas are still starting waits for one, gateway/directory.py)."""
    if not state or not state.get("ready"):
        return False
    try:
        return client(state, timeout_s=2).request("GET", "/healthz").status == 200
    except FaasgdError:
        return False


def healthy(state: dict | None) -> bool:
    """`serving`, and every function has its replicas available (`faasgd up --wait`). While the state file says
    they are not (`available`, rewritten by the runtime as it changes) the gateway is not asked: a poll every
    POLL_S making two clients and two calls took a core's fifth from the replicas it waited for."""
    if state and state.get("available") is False:
        return False
    if not serving(state):
        return False
    try:
        functions = client(state, timeout_s=2).request("GET", "/system/functions").json()
    except (FaasgdError, ValueError):
        return False
    return all(f["availableReplicas"] >= f["replicas"] for f in functions)


def up(options: UpOptions) -> tuple[dict, bool]:
    """Start the runtime unless it already runs; returns (state, whether this call started it).

    It returns once the gateway serves (`serving`): the replicas start meanwhile, and a call for a function
    with none healthy yet waits for one; with `wait`, only once every replica is healthy (`healthy`). A runtime
    that already runs is taken as it is, but refused when it runs without one of the optional `stores` asked for,
    with the command that gives it them. The gateway's login is generated first if absent (`login`); the
    docker backend (faasgd.local.services.docker_site) is refused at once when no Docker daemon answers.
    """
    from faasgd.local.replicas import watchdog
    from faasgd.local.services import docker_cli

    options.check()
    if options.backend == "docker":
        docker_cli.daemon_version()
    found = watchdog.find(options.watchdog, os.environ, Path(options.stack))  # a bad --watchdog: nothing started
    if options.nodes > 1:  # refused before anything starts, naming what is missing
        from faasgd.local.nodes.links import require_root

        require_root("emulated nodes (faasgd up --nodes)")
        if not found.found and options.backend == "process":  # a container runs its image's own of-watchdog
            raise ConfigError("--nodes", f"replicas on emulated nodes run under of-watchdog: {found.why}")
    stack, stores = options.stack, options.stores
    shown_dir = None if options.directory == DEFAULT_DIR else str(options.directory)  # as the user named it
    directory = Path(options.directory).resolve()
    ready = healthy if options.wait else serving
    state = read_state(directory)
    if state is not None:
        optional_stores.refuse_missing(state, stores, "--stores", shown_dir)  # never changed under its jobs
        refuse_other_nodes(state, options, directory)
        if ready(state) or _wait_until(directory, ready, 30):
            return read_state(directory), False
        raise FaasgdError(f"a faasgd runtime (pid {state['pid']}) runs but is not healthy; "
                          f"see {directory}/logs/runtime.log or run `faasgd down`")
    if not Path(stack).is_file():
        raise FaasgdError(f"stack: no stack file {stack!r} (run from the repository root or pass -f)")
    check_stack(stack, options.only, options.groups, stores)
    if options.port and _port_taken(options.port):
        raise FaasgdError(f"port: 127.0.0.1:{options.port} is already in use; choose another with --port (0: a free one)")
    _, adopt = _leftovers(directory, keep_stores=True)
    (directory / "logs").mkdir(parents=True, exist_ok=True)
    login(directory)
    argv = [sys.executable, "-m", "faasgd.local.lifecycle.daemon", *options.to_argv(),
            "--found-watchdog", json.dumps(found.to_json())]  # its `--version` is asked once
    if adopt:
        argv += ["--adopt", json.dumps(adopt)]
    log = directory / "logs" / "runtime.log"
    (directory / ENDED_FILE).unlink(missing_ok=True)
    with open(log, "ab") as out:
        daemon = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)

    from faasgd.openfaas import poll_until  # httpx with it, imported while the runtime starts on another core

    def read_while_alive() -> dict | None:
        if not processes.alive(daemon):
            raise FaasgdError(read_ended(directory) or f"the runtime exited with code {daemon.returncode}: {_tail(log)}")
        return read_state(directory)

    state = poll_until(read_while_alive, ready, UP_TIMEOUT_S, poll_s=POLL_S)
    if ready(state):
        return state, True
    processes.stop(daemon)
    raise FaasgdError(f"the runtime was not healthy after {UP_TIMEOUT_S:.0f}s: {_tail(log)}")


def refuse_other_nodes(state: dict, options: UpOptions, directory: Path) -> None:
    """ConfigError naming --nodes when `up` asks for emulated nodes (2 or more) that the running runtime lacks or has
    otherwise (a count, rate or placement of its own): never changed under its jobs. `up` without --nodes (as
    `faasgd train` calls it) takes the runtime as it runs."""
    running = state.get("nodes") or {}
    have = (len(running.get("list", [])) or 1, running.get("rate_mbit"), running.get("placement", "affinity"),
            running.get("backend", "process"))
    rate = None if options.node_link is None else parse_rate(options.node_link)
    if options.nodes > 1 and have != (options.nodes, rate, options.placement, options.backend):
        raise ConfigError("--nodes", f"the local runtime running in {directory} has {have[0]} node(s), links "
                                     f"{have[1] or 'unshaped'} Mbit/s, placement {have[2]}, backend {have[3]}; run "
                                     f"`faasgd down` first")


def down(directory: str = DEFAULT_DIR) -> list[int]:
    """Stop the runtime and everything it started; returns the pids stopped."""
    directory = Path(directory).resolve()
    state = load_state(directory)
    if state is None:
        return []
    stopped = []
    daemon = ProcessRef.from_json(state)
    if daemon is not None and processes.stop(daemon, DOWN_TIMEOUT_S):  # it stops its children itself
        stopped.append(daemon.pid)
    stopped += _leftovers(directory, state)[0]
    remove_server_folders(directory / TEMP_FOLDER)
    if state.get("backend") == "docker" and isinstance(state.get("runtime_id"), str):
        from faasgd.local.services import docker_cli
        from faasgd.local.replicas.containers import RUNTIME_LABEL

        # the daemon removes its containers, network and wall itself; these are what a crash left
        docker_cli.remove_labelled(f"{RUNTIME_LABEL}={state['runtime_id']}")
        from faasgd.local.services import docker_wall

        docker_wall.open_up(state["runtime_id"])
    return stopped


def remove_server_folders(folder: Path) -> None:
    """The servers' temp folders in `folder` (<dir>/tmp), then `folder` if nothing else is in it. The daemon removes
    each as it stops its server; these are a killed runtime's, and those of servers a runtime adopted from the one
    before it. Only what the runtime's servers make (faasgd-*: `--dir` may name a folder with a tmp/ of its own)."""
    for entry in folder.glob("faasgd-*"):
        shutil.rmtree(entry, ignore_errors=True)
    try:
        folder.rmdir()
    except OSError:  # not there, or holding something not ours
        pass


def _leftovers(directory: Path, state: dict | None = None,
               keep_stores: bool = False) -> tuple[list[int], dict[str, dict]]:
    """Stop what a dead runtime left behind and remove its state file; returns (pids stopped, kept entries).

    With `keep_stores` (`up` after a crash) the stores and the broker that still run as the very
    processes the state file names are left running, and their entries returned for the new
    runtime to adopt: a job's state outlives its runtime, as it outlives a gateway on a cluster.
    Replicas are always stopped (the new runtime starts its own; supervision and the queue's
    redelivery carry the job on).
    """
    state = load_state(directory) if state is None else state
    state = state or {}
    kept = {}
    if keep_stores:
        entries = {**(state.get("stores") if isinstance(state.get("stores"), dict) else {}),
                   "nats": state.get("broker")}
        kept = {name: entry for name, entry in entries.items()
                if (ref := ProcessRef.from_json(entry)) is not None and processes.alive(ref)}
    if isinstance(state.get("nodes"), dict):
        kept = {}  # a node's stores live in its namespace, removed below: none is adopted (daemon.start_servers)
    kept_refs = {ProcessRef.from_json(entry) for entry in kept.values()}
    stopped = [ref.pid for ref in processes.stop_all([ref for ref in _children(state) if ref not in kept_refs])]
    remove_nodes(state)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return stopped, kept


def remove_nodes(state: dict) -> None:
    """The emulated nodes a dead runtime left (the daemon removes its own as it stops): for containers their
    containers first, which hold the node networks."""
    nodes = state.get("nodes")
    if not (isinstance(nodes, dict) and isinstance(nodes.get("prefix"), str)):
        return
    if nodes.get("backend") != "docker":
        from faasgd.local.nodes.links import remove_all

        remove_all(nodes["prefix"])
        return
    from faasgd.local.nodes.docker_net import remove_docker_nodes
    from faasgd.local.replicas.containers import RUNTIME_LABEL
    from faasgd.local.services import docker_cli

    try:
        if isinstance(state.get("runtime_id"), str):
            docker_cli.remove_labelled_containers(f"{RUNTIME_LABEL}={state['runtime_id']}")
    finally:
        remove_docker_nodes(nodes["prefix"])


def _children(state: dict) -> list[ProcessRef]:
    """The replicas, stores, store groups' members, broker and zygote a state file names (an entry without an
    identity is never ours)."""
    replicas, stores = state.get("replicas"), state.get("stores")
    entries = (replicas if isinstance(replicas, list) else []) + \
        (list(stores.values()) if isinstance(stores, dict) else []) + \
        [state.get("broker"), state.get("registry"), state.get("zygote")]
    return [ref for ref in map(ProcessRef.from_json, entries) if ref is not None] + member_refs(state)


def _daemon_alive(state: dict | None) -> bool:
    daemon = ProcessRef.from_json(state)
    return daemon is not None and processes.alive(daemon)


def _wait_until(directory: Path, ready, seconds: float) -> bool:
    from faasgd.openfaas import poll_until

    return ready(poll_until(lambda: read_state(directory), ready, seconds, poll_s=POLL_S))


def _port_taken(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:]).strip()
    except OSError:
        return ""
