"""`faasgd up / down / invoke / scale / logs`: the local runtime and faas-cli-like calls to a gateway."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from faasgd.cli import flags
from faasgd.errors import ConfigError
from faasgd.local import GATEWAY_SECRETS, GroupSizes, UpOptions, control, queue_rules, split_line

# `faasgd down` imports only what stopping needs: faasgd.api (and its numpy), the gateway client (httpx) and the
# watchdog's finder are imported by the commands that use them.

FOLLOW_POLL_S = 0.3


def up(args) -> int:
    sizes = GroupSizes(getattr(args, "redis_cluster_masters", 3), getattr(args, "redis_cluster_replicas", 0),
                       getattr(args, "memcached_pool_servers", None))
    options = UpOptions(args.file, args.port, args.dir, args.ack_wait, queue_workers=args.queue_workers,
                        delivery=queue_rules.from_flags(args), backend=getattr(args, "backend", "process"),
                        watchdog=args.watchdog, wait=getattr(args, "wait", False), only=getattr(args, "filter", "*"),
                        groups=sizes, stores=getattr(args, "stores", None), nodes=getattr(args, "nodes", 1),
                        node_link=getattr(args, "node_link", None),
                        placement=getattr(args, "placement", "affinity")).check()  # bad flags generate no login
    flags.stack_file(args.file)
    control.check_stack(args.file, options.only, sizes, options.stores)  # before the login too
    (user, password), generated = control.login(args.dir)
    state, started = control.up(options)  # as faasgd.api.start_runtime
    print(("started" if started else "already running") + f": gateway {state['gateway_url']}")
    if "broker" in state:
        print(f"  {'queue':<10} {state['broker']['url']}  (pid {state['broker']['pid']}, "
              f"{state['delivery']['mode']} delivery)")
    for line in store_lines(state):
        print(f"  {line}")
    if "registry" in state:
        print(f"  {'registry':<10} {state['registry']['url']}  (pid {state['registry']['pid']})")
    for replica in state["replicas"]:
        where = replica.get("url") or f"127.0.0.1:{replica['port']}"
        print(f"  {replica['name']:<16} {where}  (pid {replica.get('pid', '-')})"
              + (f" on {replica['node']}" if replica.get("node") else ""))
    for line in node_lines(state):
        print(f"  {line}")
    line = watchdog_line(state)
    if line:
        print(line)
    print(f"state and logs: {Path(args.dir).resolve()}")
    print_login(state["gateway_url"], user, password if generated else None, Path(args.dir).resolve() / "secrets")
    print_image_steps(state)
    return 0


def print_image_steps(state: dict) -> None:
    """Under --backend docker: the functions waiting for their images, and the exact lines that bring them (REGISTRY
    exported before faas-cli, so stack.yml's image names point at the runtime's registry)."""
    from faasgd.local import next_steps

    steps = next_steps(state)
    if not steps:
        return
    waiting = state.get("waiting") or {}
    if waiting:
        print("waiting for their images: " + ", ".join(f"{name} ({entry['image']})" for name, entry in waiting.items()))
    print("images go to the runtime's registry: " + ("run" if waiting else "for faas-cli, export") + "\n"
          + "\n".join(f"  {line}" for line in steps))


def store_lines(state: dict) -> list[str]:
    """A line per store the runtime started: single servers, then each store group with its members' pids."""
    lines = [f"{name:<10} {store['url']}  (pid {store['pid']})" for name, store in state.get("stores", {}).items()]
    for name, group in (state.get("store_groups") or {}).items():
        pids = ", ".join(str(member.get("pid", "-")) for member in group.get("members", []))
        lines.append(f"{name:<10} {group['url']}  ({len(group.get('members', []))} servers, pids {pids})")
    return lines


def node_lines(state: dict) -> list[str]:
    """With emulated nodes: a line per node, its address and link, then its stores and replicas."""
    nodes = state.get("nodes") or {}
    rate = nodes.get("rate_mbit")
    lines = []
    for node in nodes.get("list", []):
        here = [name for name, store in (state.get("stores") or {}).items() if store.get("node") == node["name"]] + \
            [replica["name"] for replica in state.get("replicas", []) if replica.get("node") == node["name"]]
        lines.append(f"{node['name']:<10} {node['address']}  link {node['link']} "
                     f"({f'{rate:g} Mbit/s' if rate else 'unshaped'}): {', '.join(here) or '-'}")
    return lines


def watchdog_line(state: dict | None) -> str | None:
    """How the runtime runs its replicas ("replicas under of-watchdog ..." or "... bare ..."), from its state."""
    from faasgd.local import Watchdog

    found = Watchdog.from_json((state or {}).get("watchdog"))
    return found.describe() if found is not None else None


def print_login(url: str, user: str, password: str | None, secrets: Path) -> None:
    """The faas-cli login line; the password itself only when it was just generated (shown once)."""
    kept = secrets / GATEWAY_SECRETS[1]
    if password is not None:
        print(f"gateway login generated: user {user}, password {password}\n"
              f"  (shown this once; kept in {kept}, mode 0600)")
    print(f"log faas-cli in: faas-cli login --gateway {url} -u {user} --password-stdin < {kept}")


def down(args) -> int:
    stopped = control.down(args.dir)  # faasgd.api.stop_runtime
    print(f"stopped {len(stopped)} process(es)" + (f": {' '.join(map(str, stopped))}" if stopped else ""))
    return 0


def parse_pairs(pairs: list[str], flag: str) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(flag, f"must be KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def invoke(args) -> int:
    """Like `faas-cli invoke`: the body from stdin, the answer on stdout; non-2xx exits 1."""
    flags.function_name(args.name)
    method, _ = flags.method(args.method), flags.seconds("--timeout", args.timeout)
    headers = parse_pairs(args.header, "header")
    query = parse_pairs(args.query, "query")
    body = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    from faasgd.cli.connect import gateway

    client = gateway(args, timeout_s=args.timeout)
    if args.async_:
        call_id = client.invoke_async(args.name, body, headers.pop("X-Callback-Url", None), headers)
        print(f"Function submitted asynchronously. X-Call-Id: {call_id}")
        return 0
    path = f"/function/{args.name}"
    answer = client.request(method, path, body or None, headers, query)
    sys.stdout.write(answer.body.decode("utf-8", "replace"))
    if not answer.body.endswith(b"\n"):
        sys.stdout.write("\n")
    if answer.status >= 300:
        print(f"Server returned unexpected status code: {answer.status}", file=sys.stderr)
        return 1
    return 0


def scale(args) -> int:
    """Like `kubectl scale` on a cluster: set the count, then wait until the replicas are available.

    The gateway clamps the count to [1, scale.max] (at most 5, Community Edition's cap); the command
    waits for the count set and says when it differs from the one asked for.
    """
    flags.function_name(args.name)
    flags.seconds("--wait", args.wait)
    if args.replicas < 0:
        raise ConfigError("--replicas", f"must be a whole number >= 0 (the gateway clamps it to the function's range), "
                                        f"got {args.replicas}")
    from faasgd.cli.connect import gateway

    client = gateway(args)
    client.scale(args.name, args.replicas)
    count = client.function_status(args.name)["replicas"]
    status = client.wait_for_replicas(args.name, count, args.wait, poll_s=0.2)
    clamped = f" (asked for {args.replicas}; clamped to the function's [1, com.openfaas.scale.max])" \
        if count != args.replicas else ""
    print(f"{args.name}: {status['availableReplicas']} replica(s){clamped}")
    return 0


def logs(args) -> int:
    """Print a function's replica logs (.faasgd/logs/<name>-<i>.log): the running runtime's replicas, or the last
    one's (each start sets the earlier runtime's aside in logs/previous/: state_file.set_aside_logs); --follow
    keeps printing."""
    folder = Path(args.dir) / "logs"
    flags.function_name(args.name)  # it is a file pattern below: never a path or a glob
    files = sorted(folder.glob(f"{args.name}-*.log"))
    if not files and args.name != "runtime":
        raise ConfigError("name", f"no logs for {args.name!r} in {folder} (is it a function of the stack?)")
    files = files or [folder / "runtime.log"]
    offsets = {path: 0 for path in files}
    while True:
        for path in sorted(offsets):
            with open(path, "rb") as f:
                f.seek(offsets[path])
                chunk = f.read()
                offsets[path] = f.tell()
            for line in chunk.decode("utf-8", "replace").splitlines():
                text = split_line(line)[1]  # the time stamp is for /system/logs
                print(f"{path.stem}: {text}" if len(offsets) > 1 else text, flush=True)
        if not args.follow:
            return 0
        time.sleep(FOLLOW_POLL_S)
        for path in folder.glob(f"{args.name}-*.log"):  # replicas started since
            offsets.setdefault(path, 0)
