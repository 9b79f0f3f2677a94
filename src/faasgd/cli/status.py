"""`faasgd status [JOB] [--watch]`: the runtime's functions, or a job's progress and result."""

from __future__ import annotations

import os

from rich.table import Table

from faasgd.api.jobs import Job, in_store, through_gateway
from faasgd.cli import flags, stacking_status, traces
from faasgd.cli.connect import gateway
from faasgd.cli.output import emit_json
from faasgd.cli.runtime import node_lines, store_lines, watchdog_line
from faasgd.cli.progress import LiveProgress, console, print_batch_note, print_summary, worker_table
from faasgd.cli.terminal_text import cell, visible
from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.local import control
from faasgd.openfaas import json_answer, wait_for_job
from faasgd.store import open_store
from faasgd.store.keys import check_job_id


def run(args) -> int:
    if not args.job_id:
        return runtime_status(args)
    if getattr(args, "trace", False):
        return traces.run(args)
    status = read_job_status(args)
    out = console()
    if args.json:
        emit_json(status)
    elif stacking_status.is_stacking_job(args.job_id):
        stacking_status.print_status(status, out)
    elif status["result"]:
        print_summary(status["result"], status["workers"], out)
        print_batch_note(status.get("config"), out)
    else:
        out.print(f"job {args.job_id}: running", highlight=False, markup=False)
        if status.get("waiting"):
            out.print(visible(f"waiting: {status['waiting']['message']}"), style="yellow", highlight=False, markup=False)
        out.print(worker_table(status["workers"], status["config"]["max_epochs"]))
    return 0


def job_handle(args) -> Job:
    """The training job args.job_id names: in the store itself with --direct (--store-url or $STORE_URL), else
    through the gateway (--store: the function's configured store holding it, by name)."""
    check_job_id(args.job_id)
    if args.store:
        read_setting({"store": args.store}, "store")  # a name, never a location
    if args.direct:
        return in_store(open_store(args.store_url or read_setting(os.environ, "store_url")), args.job_id)
    if args.store_url:
        raise ConfigError("store_url", "only with --direct; through a gateway name the function's store with --store")
    return through_gateway(gateway(args), {"job_id": args.job_id, **({"store": args.store} if args.store else {})})


def read_job_status(args) -> dict:
    """The job's status: from the store itself with --direct, else through the gateway (--watch: until it ends)."""
    check_job_id(args.job_id)
    flags.seconds("--timeout", args.timeout)
    if args.store:
        read_setting({"store": args.store}, "store")  # a name, never a location
    if stacking_status.is_stacking_job(args.job_id):
        read = stacking_status.reader(args)
    else:
        read = job_handle(args).status
    if not args.watch:
        return read()
    if stacking_status.is_stacking_job(args.job_id):
        return wait_for_job(read, args.timeout)  # four phases, no per-worker progress to draw
    live = LiveProgress()
    try:
        return wait_for_job(read, args.timeout, on_status=live)
    finally:
        live.close()


def runtime_status(args) -> int:
    client = gateway(args)
    functions = json_answer(client.request("GET", "/system/functions"), "gateway")
    state = control.read_state(args.dir) if getattr(args, "dir", None) else None
    nodes = state.get("nodes") if state and state.get("gateway_url") == client.url.rstrip("/") else None
    if args.json:  # the gateway's function list; with emulated nodes, that and the nodes with what runs on each
        emit_json({"functions": functions, "nodes": node_entries(state)} if nodes else functions)
        return 0
    placed = any(f.get("replicaNodes") for f in functions)
    table = Table("function", "replicas", "available", "invocations", *(["nodes"] if placed else []), box=None,
                  pad_edge=False)
    for f in functions:
        where = [", ".join(f"{replica} on {node}" for replica, node in (f.get("replicaNodes") or {}).items())]
        table.add_row(*map(cell, (f["name"], f["replicas"], f["availableReplicas"], f.get("invocationCount", 0),
                                  *(where if placed else []))))
    out = console()
    out.print(f"gateway {client.url}", highlight=False, markup=False)
    if state and "registry" in state and state.get("gateway_url") == client.url.rstrip("/"):  # the container backend's registry, where faas-cli pushes
        out.print(f"registry {state['registry']['url']} ({state.get('backend')} backend)", highlight=False,
                  markup=False)
    if state and state.get("gateway_url") == client.url.rstrip("/"):  # the local runtime's stores
        for line in store_lines(state):
            out.print(f"store {line}", highlight=False, markup=False)
        for line in node_lines(state):
            out.print(f"node {line}", highlight=False, markup=False)
    line = local_watchdog_line(args, client.url)
    if line:
        out.print(line, highlight=False, markup=False)
    out.print(table)
    return 0


def node_entries(state: dict) -> list[dict]:
    """Each emulated node of the runtime's state: its name, address, link, and the stores and replicas on it."""
    return [{**node, "stores": sorted(name for name, store in (state.get("stores") or {}).items()
                                      if store.get("node") == node["name"]),
             "replicas": sorted(r["name"] for r in state.get("replicas", []) if r.get("node") == node["name"])}
            for node in state["nodes"].get("list", [])]


def local_watchdog_line(args, url: str) -> str | None:
    """How the local runtime runs its replicas, when `url` is its gateway (another gateway's are pods)."""
    state = control.read_state(getattr(args, "dir", control.DEFAULT_DIR))
    if not state or state.get("gateway_url", "").rstrip("/") != url.rstrip("/"):
        return None
    return watchdog_line(state)
