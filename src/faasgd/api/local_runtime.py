"""The local runtime from Python, and which gateway a call talks to.

    from faasgd import api
    with api.runtime(port=0) as rt:      # `faasgd up`; stopped on leaving only if this block started it
        print(rt.gateway_url)
        client = api.connect()           # a gateway client with the runtime's login

Which gateway: `gateway=` (the CLI's --gateway), then $OPENFAAS_URL, then the running local runtime of
`directory`. There is no fallback to http://127.0.0.1:8080: a gateway nobody named and this machine's runtime
did not start may be anybody's, so the call stops and says how to name one.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from faasgd.errors import ConfigError
from faasgd.local import ProcessRef, UpOptions, control, credentials, load_state
from faasgd.openfaas import GatewayClient

DEFAULT_DIR = control.DEFAULT_DIR
NO_GATEWAY = ("no gateway: pass --gateway URL (Python: gateway=URL), set OPENFAAS_URL, or start the local runtime "
              "with `faasgd up` (Python: faasgd.api.start_runtime())")
# The runtimes start_runtime started in this Python process, by folder: the daemon's identity (pid and start time).
# stop_runtime stops only these (unless forced), so a runtime a terminal's `faasgd up` or another session started
# is left running however a session ends.
_STARTED_HERE: dict[Path, ProcessRef | None] = {}


@dataclass(frozen=True)
class Runtime:
    """A running local runtime: its gateway, its folder, and whether the call that returned it started it."""

    gateway_url: str
    directory: str
    started: bool
    state: dict

    def client(self, timeout_s: float = 30.0) -> GatewayClient:
        """A client of this runtime's gateway, logged in to /system.

            >>> rt.client().function_status("emnist-train")["replicas"]   # doctest: +SKIP
            2
        """
        return control.client(self.state, timeout_s)


def start_runtime(stack: str = "stack.yml", port: int = 0, directory: str = DEFAULT_DIR,
                  **settings) -> Runtime:
    """Start the local runtime (stores, queue, gateway, replicas) unless it already runs: `faasgd up`.

    `settings` are the other fields of faasgd.local.UpOptions (ack_wait_s, upstream_timeout_s, queue_workers,
    delivery, backend, watchdog, wait, only, groups, stores); an unknown one is a ConfigError. `port` 0 picks a free
    port (the default here; the CLI's is 8080). Run from the repository root or
    pass `stack=` the path of stack.yml. `backend="docker"` runs each replica as a container of its
    function's image, beside a registry on loopback (`faasgd up --backend docker`). `watchdog` (the process
    backend's): "auto" (replicas under the real of-watchdog when found), "off" (bare `python index.py`), or
    fwatchdog's path. It returns once the gateway serves, while the replicas start (a call for a function with
    none serving yet waits for one); `wait=True` returns once every replica serves. `only` deploys the stack's
    functions matching that wildcard (`faasgd up --filter`, as `faas-cli deploy --filter`). `stores` starts the
    optional stores named ("cluster", "pool", "s3", "dynamodb": `faasgd up --stores`) and gives them to every function; a
    runtime that runs without one of them is refused with the command that gives it them.

        >>> rt = start_runtime(port=0)           # doctest: +SKIP
        >>> rt.gateway_url, rt.started           # doctest: +SKIP
        ('http://127.0.0.1:41235', True)
    """
    if not Path(stack).is_file():
        raise ConfigError("stack", f"no stack file {stack!r} (run from the repository root, or pass --file / "
                                   f"Python: stack='path/to/stack.yml')")
    known = UpOptions.__dataclass_fields__
    for name in settings.keys() - known:
        raise ConfigError(name, f"is not a runtime setting; they are {', '.join(known)}")
    state, started = control.up(UpOptions(stack, port, directory, **settings))
    if started:
        _STARTED_HERE[Path(directory).resolve()] = ProcessRef.from_json(state)
    return Runtime(state["gateway_url"], str(Path(directory).resolve()), started, state)


def stop_runtime(directory: str = DEFAULT_DIR, *, force: bool = False) -> list[int]:
    """Stop the runtime of `directory` and everything it started (`faasgd down`) if `start_runtime` started it in
    this Python process; the pids stopped. A runtime found running (a terminal's `faasgd up`, another session's)
    is left running and [] returned; `force=True` stops it all the same, as `faasgd down` does.

        >>> stop_runtime()                       # doctest: +SKIP
        [41230, 41231, 41232]
    """
    folder = Path(directory).resolve()
    ours = _STARTED_HERE.get(folder)
    replaced = ours is not None and ProcessRef.from_json(load_state(folder)) != ours
    if not force and (folder not in _STARTED_HERE or replaced):
        return []  # not started here, or since replaced by a runtime someone else started in that folder
    _STARTED_HERE.pop(folder, None)
    return control.down(directory)


@contextmanager
def runtime(stack: str = "stack.yml", port: int = 0, directory: str = DEFAULT_DIR, *,
            keep_up: bool = False, **options) -> Iterator[Runtime]:
    """The local runtime for a `with` block: started if needed, stopped after it if this block started it
    (never a runtime that was already running; `keep_up=True` leaves it running either way).

        >>> with runtime(port=0) as rt:          # doctest: +SKIP
        ...     job = train(dataset="synthetic", train_samples=4000, gateway=rt.gateway_url)
        ...     job.wait()
    """
    rt = start_runtime(stack, port, directory, **options)
    try:
        yield rt
    finally:
        if rt.started and not keep_up:
            stop_runtime(directory)


def gateway_url(gateway: str | None = None, directory: str = DEFAULT_DIR) -> str:
    """The gateway a call talks to: `gateway`, else $OPENFAAS_URL, else the running local runtime's.

        >>> gateway_url("http://127.0.0.1:8080")
        'http://127.0.0.1:8080'
    """
    if gateway:
        return gateway
    if os.environ.get("OPENFAAS_URL"):
        return os.environ["OPENFAAS_URL"]
    state = control.read_state(directory)
    if state:
        return state["gateway_url"]
    raise ConfigError("gateway", NO_GATEWAY)


def connect(gateway: str | None = None, directory: str = DEFAULT_DIR, timeout_s: float = 30.0) -> GatewayClient:
    """A client of the gateway `gateway_url` finds, logged in to /system with the local runtime's login when
    it is that runtime's gateway, else with the one `faas-cli login` saved for it.

        >>> client = connect()                   # doctest: +SKIP
        >>> [f["name"] for f in client.request("GET", "/system/functions").json()]   # doctest: +SKIP
        ['emnist-setup', 'emnist-train', ...]
    """
    url = gateway_url(gateway, directory)
    return GatewayClient(url, timeout_s=timeout_s, auth=credentials.for_gateway(url, control.read_state(directory)))
