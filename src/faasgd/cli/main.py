"""`faasgd` command line: the local OpenFaaS runtime (up, down, invoke, scale, logs), jobs (train, status),
their models (model, evaluate).

Exit codes: 0 ok, 1 the job or the call failed, 2 bad input (names the field; nothing written),
3 store unreachable (names the URL), 4 data missing, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys

from faasgd import __version__
from faasgd.cli import output
from faasgd.config import FIELDS, RENAMED
from faasgd.errors import ConfigError, DataError, FaasgdError, StoreError
from faasgd.local import queue_rules
from faasgd.local.control import DEFAULT_DIR

EXIT_FAILED, EXIT_INPUT, EXIT_STORE, EXIT_DATA = 1, 2, 3, 4
ALIASES = {"number_of_workers": ["--workers"]}


class OneLineParser(argparse.ArgumentParser):
    """A bad flag: one line naming it, exit 2 (the usage is in --help). Subcommands' parsers are of this class too."""

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per config key (dashes for underscores); values are checked by load_config."""
    for name, field in FIELDS.items():
        flags = ["--" + name.replace("_", "-")] + ALIASES.get(name, [])
        parser.add_argument(*flags, dest=name, default=None, metavar=name.upper(),
                            help=f"(default {field.default!r})")
    for old in RENAMED:  # accepted by the parser only to be refused by load_config, naming the new key
        parser.add_argument("--" + old.replace("_", "-"), dest=f"renamed_{old}", default=None, help=argparse.SUPPRESS)


def add_runtime_flags(parser: argparse.ArgumentParser, gateway: bool = True) -> None:
    parser.add_argument("--dir", default=DEFAULT_DIR, help="the local runtime's state and logs (default .faasgd)")
    if gateway:
        parser.add_argument("--gateway", "-g", default=None,
                            help="gateway URL (default: $OPENFAAS_URL, else the running local runtime)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="faasgd", description="Distributed Downpour SGD as OpenFaaS functions.")
    parser.add_argument("--version", action="version", version=f"faasgd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start the local runtime: stores, gateway, function replicas")
    up.add_argument("-f", "--file", default="stack.yml")
    up.add_argument("--port", type=int, default=8080, help="the gateway's port (0: a free one; default 8080)")
    up.add_argument("--ack-wait", type=float, default=300.0, help="seconds before an unfinished async call is redelivered")
    up.add_argument("--queue-workers", type=int, default=None, help="default: one per call the replicas run at once (replicas x waitress_threads)")
    queue_rules.add_flags(up)  # --delivery ce|pro and pro's retry settings
    add_runtime_flags(up, gateway=False)

    down = sub.add_parser("down", help="stop everything `faasgd up` started")
    add_runtime_flags(down, gateway=False)

    invoke = sub.add_parser("invoke", help="call a function through the gateway; body from stdin")
    invoke.add_argument("name")
    invoke.add_argument("--async", dest="async_", action="store_true")
    invoke.add_argument("-H", "--header", action="append", default=[], metavar="KEY=VALUE")
    invoke.add_argument("--query", action="append", default=[], metavar="KEY=VALUE")
    invoke.add_argument("--method", default="POST")
    invoke.add_argument("--timeout", type=float, default=300.0)
    add_runtime_flags(invoke)

    scale = sub.add_parser("scale", help="set a function's replica count (like kubectl scale)")
    scale.add_argument("name")
    scale.add_argument("--replicas", type=int, required=True)
    scale.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the replicas")
    add_runtime_flags(scale)

    logs = sub.add_parser("logs", help="a function's replica logs")
    logs.add_argument("name")
    logs.add_argument("--follow", "-f", action="store_true")
    add_runtime_flags(logs, gateway=False)

    status = sub.add_parser("status", help="the runtime's functions, or a job's progress and result")
    status.add_argument("job_id", nargs="?")
    status.add_argument("--watch", action="store_true")
    output.add_flags(status, "print the status (or the functions) as one JSON document on stdout; --watch's "
                             "progress on stderr")
    status.add_argument("--timeout", type=float, default=3600.0)
    status.add_argument("--store", default=None, help="the function's configured store holding the job, by name")
    status.add_argument("--store-url", default=None, help="with --direct: the store holding the job")
    status.add_argument("--direct", action="store_true", help="read the store directly, not through the gateway")
    status.add_argument("--trace", action="store_true", help="the tree of the job's spans (README \"Traces\")")
    status.add_argument("--trace-dir", default=None, help="with --trace: the faasgd-file exporter's directory "
                                                          "(default: FAASGD_TRACES_DIR)")
    add_runtime_flags(status)

    train = sub.add_parser("train", help="run a training job end to end and print its summary")
    add_config_flags(train)
    train.add_argument("--direct", action="store_true",
                       help="worker processes straight against the store, no gateway or functions")
    output.add_flags(train, "print the result record as the one JSON document on stdout; progress and the "
                            "summary on stderr")
    train.add_argument("--dry-run", action="store_true", help="validate and print the config; start nothing")
    train.add_argument("--keep-up", action="store_true", help="leave a runtime this command started running")
    train.add_argument("--timeout", type=float, default=3600.0, help="stop watching after this many seconds")
    train.add_argument("-f", "--file", default="stack.yml")
    train.add_argument("--port", type=int, default=None,
                       help="the gateway's port if this command starts the runtime (default: a free one)")
    add_runtime_flags(train)

    from faasgd.cli import data, model, predict, results  # `faasgd data`, `faasgd model`, `faasgd evaluate`, ...

    data.add_parser(sub)
    results.add_parser(sub)  # `faasgd results list | runs | compare`
    predict.add_parser(sub)  # `faasgd predict`
    model.add_parsers(sub, add_runtime_flags)
    return parser


def dispatch(args) -> int:
    from faasgd.cli import data, model, predict, results, runtime, status, train

    handlers = {"up": runtime.up, "down": runtime.down, "invoke": runtime.invoke, "scale": runtime.scale,
                "logs": runtime.logs, "status": status.run, "train": train.run, "data": data.run,
                "model": model.save, "evaluate": model.evaluate, "results": results.run,
                "predict": predict.run}
    with output.routed(args):  # with --json stdout holds the one JSON document; text for a person goes to stderr
        return handlers[args.command](args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return dispatch(args)
    except ConfigError as error:
        return fail(error, EXIT_INPUT)
    except StoreError as error:
        return fail(error, EXIT_STORE)
    except DataError as error:
        return fail(error, EXIT_DATA)
    except FaasgdError as error:
        status = getattr(error, "http_status", 500)
        return fail(error, {400: EXIT_INPUT, 409: EXIT_DATA, 503: EXIT_STORE, 504: EXIT_STORE}.get(status, EXIT_FAILED))
    except KeyboardInterrupt:
        return fail("interrupted", 130)


def fail(error, code: int) -> int:
    print(f"faasgd: error: {error}", file=sys.stderr)
    return code
