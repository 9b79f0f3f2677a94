"""`faasgd` command line: the local OpenFaaS runtime (up, down, invoke, scale, logs), jobs (train, status),
their models (model, evaluate).

Exit codes: 0 ok, 1 the job or the call failed, 2 bad input (names the field; nothing written),
3 store unreachable (names the URL), 4 data missing, 130 interrupted, 141 stdout closed (`faasgd up | head -1`:
the command ends at that write, quietly, as a Unix tool ended by SIGPIPE; faasgd.closed_stdout).
"""

from __future__ import annotations

import sys

# httpx's command-line client (httpx._main: click, pygments; ~0.03 s of every command that talks to a gateway) is
# never run by `faasgd`; httpx imports it inside `try: ... except ImportError`, and None in sys.modules makes that
# import fail at once (as the runtime's daemon and the replicas do: local/lifecycle/daemon.py)
sys.modules.setdefault("httpx._main", None)

import argparse
import gc
import importlib

from faasgd import __version__
from faasgd.closed_stdout import quiet_when_closed
from faasgd.cli import forkserver, output
from faasgd.errors import ConfigError, DataError, FaasgdError, StoreError
from faasgd.local import DEFAULT_DIR, queue_rules

EXIT_FAILED, EXIT_INPUT, EXIT_STORE, EXIT_DATA = 1, 2, 3, 4
ALIASES = {"number_of_workers": ["--workers"]}
# The runtime's commands are parsed without the training flags and the data, model and results commands, whose
# modules (pydantic's config model, numpy) take longer to import than `faasgd down` takes to run.
RUNTIME_COMMANDS = ("up", "down", "invoke", "scale", "logs")
HANDLERS = {"up": ("runtime", "up"), "down": ("runtime", "down"), "invoke": ("runtime", "invoke"),
            "scale": ("runtime", "scale"), "logs": ("runtime", "logs"), "status": ("status", "run"),
            "cancel": ("cancel", "run"), "resume": ("train", "resume"),
            "train": ("train", "run"), "data": ("data", "run"), "model": ("model", "save"),
            "evaluate": ("model", "evaluate"), "results": ("results", "run"), "predict": ("predict", "run"),
            "sweep": ("sweep", "run")}


class OneLineParser(argparse.ArgumentParser):
    """A bad flag: one line naming it, exit 2 (the usage is in --help). Subcommands' parsers are of this class too."""

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per config key (dashes for underscores), its help the key's description, the values it takes and
    its default; values are checked by load_config."""
    from faasgd.config import RENAMED, describe_fields

    for name, default, description in describe_fields():
        flags = ["--" + name.replace("_", "-")] + ALIASES.get(name, [])
        parser.add_argument(*flags, dest=name, default=None, metavar=name.upper(),
                            help=config_help(name, default, description).replace("%", "%%"))
    for old in RENAMED:  # accepted by the parser only to be refused by load_config, naming the new key
        parser.add_argument("--" + old.replace("_", "-"), dest=f"renamed_{old}", default=None, help=argparse.SUPPRESS)


def config_help(name: str, default: str, description: str) -> str:
    """A config flag's help: the description, then what it takes and its default. A store location is taken
    from a flag with --direct only: through the gateway the function's own configuration holds it."""
    from faasgd.config import FIELDS, LOCATION_KEYS
    from faasgd.config.base import rule

    takes = rule(FIELDS[name])
    text = f"{description} ({takes + '; ' if takes else ''}default {default})"
    if name in LOCATION_KEYS:
        text = f"with --direct only (a function takes store locations from its own configuration: name one of its " \
               f"stores with --store): {text}"
    return text


def add_runtime_flags(parser: argparse.ArgumentParser, gateway: bool = True) -> None:
    parser.add_argument("--dir", default=DEFAULT_DIR, help="the local runtime's state and logs (default .faasgd)")
    if gateway:
        parser.add_argument("--gateway", "-g", default=None,
                            help="gateway URL (default: $OPENFAAS_URL, else the running local runtime)")


def add_train_flags(train: argparse.ArgumentParser, only: str | None) -> None:
    """`faasgd train`'s flags (and `faasgd resume`'s, the same)."""
    if only not in RUNTIME_COMMANDS:
        add_config_flags(train)
    train.add_argument("--direct", action="store_true",
                       help="worker processes straight against the store, no gateway or functions")
    output.add_flags(train, "print the result record as the one JSON document on stdout; progress and the "
                            "summary on stderr")
    train.add_argument("--dry-run", action="store_true", help="validate and print the config; start nothing")
    train.add_argument("--detach", action="store_true",
                       help="start the job, print its id and return (a runtime this command starts stays up); "
                            "follow it with `faasgd status JOB --watch`, stop it with `faasgd cancel JOB`")
    train.add_argument("--keep-up", action="store_true", help="leave a runtime this command started running (it runs the training functions only)")
    train.add_argument("--timeout", type=float, default=3600.0, help="stop watching after this many seconds")
    train.add_argument("-f", "--file", default="stack.yml",
                       help="the stack file if this command starts the runtime (default stack.yml)")
    train.add_argument("--port", type=int, default=None,
                       help="the gateway's port if this command starts the runtime (default: a free one)")
    train.add_argument("--mllog", default=None, metavar="FILE",
                       help="write the job as an MLPerf Training-format log (:::MLLOG lines) to FILE when it ends; "
                            "faasgd's benchmark is not one of MLPerf's (extra track; docs/how-to/tracking.md)")
    train.add_argument("--tensorboard", default=None, metavar="DIR",
                       help="write the job's TensorBoard event files under DIR/<job_id> when it ends: its curves and "
                            "one run per worker (extra track; docs/how-to/tracking.md)")
    train.add_argument("--mlflow", nargs="?", const="", default=None, metavar="URI",
                       help="log the job as one MLflow run at URI (a tracking server, or sqlite:///FILE) when it ends; "
                            "without URI, MLFLOW_TRACKING_URI (extra track; docs/how-to/tracking.md)")
    train.add_argument("--metrics-lines", action="store_true",
                       help="print name=value lines on stdout as the job's evaluations are read, and its final "
                            "figures at its end, for Katib's StdOut metrics collector (not with --json)")
    add_runtime_flags(train)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only` one of RUNTIME_COMMANDS, without the parsers it does not need."""
    parser = OneLineParser(prog="faasgd", description="Distributed Downpour SGD as OpenFaaS functions.")
    parser.add_argument("--version", action="version", version=f"faasgd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start the local runtime: stores, gateway, function replicas")
    up.add_argument("-f", "--file", default="stack.yml",
                    help="the stack file whose functions to run (default stack.yml)")
    up.add_argument("--port", type=int, default=8080, help="the gateway's port (0: a free one; default 8080)")
    up.add_argument("--ack-wait", type=float, default=300.0, help="seconds before an unfinished async call is redelivered")
    up.add_argument("--queue-workers", type=int, default=None, help="default: one per call the replicas run at once (replicas x waitress_threads)")
    queue_rules.add_flags(up)  # --delivery ce|pro and pro's retry settings
    up.add_argument("--backend", choices=("process", "docker"), default="process",
                    help="run replicas as processes (default) or as containers of their images, with a registry "
                         "on loopback for faas-cli up (needs a Docker daemon)")
    up.add_argument("--watchdog", default="auto",
                    help="run replicas under the real of-watchdog: auto (FAASGD_WATCHDOG, else fwatchdog on PATH, "
                         "else ../shared/bin/fwatchdog beside the project; bare `python index.py` without one), "
                         "off, or fwatchdog's path (default auto)")
    up.add_argument("--filter", default="*", metavar="WILDCARD",
                    help="deploy only the stack's functions whose names match, as faas-cli deploy --filter (default *)")
    up.add_argument("--wait", action="store_true",
                    help="return once every replica serves (default: once the gateway serves; a call for a function "
                         "whose replicas are still starting waits for one)")
    up.add_argument("--redis-cluster-masters", type=int, default=3, metavar="N",
                    help="masters of the Redis Cluster started when the stack names redis-cluster (default 3)")
    up.add_argument("--redis-cluster-replicas", type=int, default=0, metavar="N",
                    help="replicas per master of that cluster (default 0)")
    up.add_argument("--memcached-pool-servers", type=int, default=None, metavar="N",
                    help="servers of the memcached pool started when the stack names memcached-pool members "
                         "(default: as many as it names)")
    up.add_argument("--stores", default=None, metavar="NAMES",
                    help="also start these stores, comma-separated, and give them to every function: cluster (a Redis "
                         "Cluster: --store cluster), pool (a memcached pool: --store pool), s3 (an S3-compatible "
                         "server: --channel s3, transfer s3), dynamodb (DynamoDB's API on that server: --channel dynamodb); "
                         "default none, the stack's own only")
    up.add_argument("--nodes", type=int, default=1, metavar="N",
                    help="emulate N machines: each a network namespace on a bridge (with --backend docker a Docker "
                         "network), the stores on the first, a memcached-local on each, replicas placed as "
                         "Kubernetes would (needs root, and of-watchdog for processes; default 1: none)")
    up.add_argument("--node-link", default=None, metavar="RATE",
                    help="each node's link rate both ways, as tc writes it (100mbit, 1gbit; default unshaped)")
    up.add_argument("--placement", choices=("affinity", "spread"), default="affinity",
                    help="among nodes: honour the k8s/ manifests' pod affinity (emnist-train beside the store), or "
                         "spread replicas only (default affinity)")
    add_runtime_flags(up, gateway=False)

    down = sub.add_parser("down", help="stop everything `faasgd up` started")
    add_runtime_flags(down, gateway=False)

    invoke = sub.add_parser("invoke", help="call a function through the gateway; body from stdin")
    invoke.add_argument("name", help="the function to call")
    invoke.add_argument("--async", dest="async_", action="store_true",
                        help="queue the call (/async-function); an X-Callback-Url header receives the answer")
    invoke.add_argument("-H", "--header", action="append", default=[], metavar="KEY=VALUE",
                        help="an HTTP header to send (repeatable)")
    invoke.add_argument("--query", action="append", default=[], metavar="KEY=VALUE",
                        help="a query-string parameter to send (repeatable)")
    invoke.add_argument("--method", default="POST", help="the HTTP method (default POST)")
    invoke.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the answer (default 300)")
    add_runtime_flags(invoke)

    scale = sub.add_parser("scale", help="set a function's replica count (like kubectl scale)")
    scale.add_argument("name", help="the function to scale")
    scale.add_argument("--replicas", type=int, required=True,
                       help="the replica count (clamped to the function's [1, com.openfaas.scale.max])")
    scale.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the replicas")
    add_runtime_flags(scale)

    logs = sub.add_parser("logs", help="a function's replica logs")
    logs.add_argument("name", help="the function whose replicas' logs to print")
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines, like tail -f")
    add_runtime_flags(logs, gateway=False)

    status = sub.add_parser("status", help="the runtime's functions, or a job's progress and result")
    status.add_argument("job_id", nargs="?", help="the job (without it: the runtime's functions)")
    status.add_argument("--watch", action="store_true", help="follow the job's progress until it ends")
    output.add_flags(status, "print the status (or the functions) as one JSON document on stdout; --watch's "
                             "progress on stderr")
    status.add_argument("--timeout", type=float, default=3600.0, help="with --watch: stop after this many seconds")
    status.add_argument("--store", default=None, help="the function's configured store holding the job, by name")
    status.add_argument("--store-url", default=None, help="with --direct: the store holding the job")
    status.add_argument("--direct", action="store_true", help="read the store directly, not through the gateway")
    status.add_argument("--trace", action="store_true", help="the tree of the job's spans (docs/how-to/traces.md)")
    status.add_argument("--trace-dir", default=None, help="with --trace: the faasgd-file exporter's directory "
                                                          "(default: FAASGD_TRACES_DIR)")
    add_runtime_flags(status)

    cancel = sub.add_parser("cancel", help="stop a running job: its result is `cancelled`, its model the last "
                                           "parameters")
    cancel.add_argument("job_id", help="the job")
    cancel.add_argument("--timeout", type=float, default=60.0,
                        help="wait this many seconds for the job to end (0: return once the cancel is recorded)")
    cancel.add_argument("--store", default=None, help="the function's configured store holding the job, by name")
    cancel.add_argument("--store-url", default=None, help="with --direct: the store holding the job")
    cancel.add_argument("--direct", action="store_true", help="write to the store directly, not through the gateway")
    output.add_flags(cancel, "print the job's status as one JSON document on stdout")
    add_runtime_flags(cancel)

    train = sub.add_parser("train", help="run a training job end to end and print its summary")
    add_train_flags(train, only)
    resume = sub.add_parser("resume", help="a new job from an ended job's last parameters, its configuration and "
                                           "the flags given over it")
    resume.add_argument("job_id", help="the ended job (cancelled, failed or done) to go on from")
    resume.add_argument("--model-file", default=None, metavar="FILE",
                        help="JOB's model file (faasgd model JOB -o FILE): when the store has lost JOB, its "
                             "parameters and configuration are put back from the file first")
    add_train_flags(resume, only)

    if only in RUNTIME_COMMANDS:
        return parser
    from faasgd.cli import data, model, predict, results, sweep  # `faasgd data`, `faasgd model`, `faasgd evaluate`, ...

    data.add_parser(sub)
    results.add_parser(sub)  # `faasgd results list | runs | compare`
    predict.add_parser(sub)  # `faasgd predict`
    model.add_parsers(sub, add_runtime_flags)
    sweep.add_parser(sub, add_runtime_flags)  # `faasgd sweep FILE`
    return parser


def dispatch(args) -> int:
    module, name = HANDLERS[args.command]
    handler = getattr(importlib.import_module(f"faasgd.cli.{module}"), name)
    with output.routed(args):  # with --json stdout holds the one JSON document; text for a person goes to stderr
        return handler(args)


def command_of(argv: list[str]) -> str | None:
    """The subcommand `argv` names (its first word that is not a flag), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if forkserver.wanted(argv):  # the workers' imports, beside this command's own (cli/forkserver.py)
        forkserver.start()
    args = build_parser(command_of(argv)).parse_args(argv)
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


def entry() -> int:
    """The `faasgd` program (the console script and `python -m faasgd.cli`): `main`, then the heap frozen
    (gc.freeze) so the interpreter's teardown skips its garbage collections over every object the command's
    imports made (pydantic's models, numpy, rich, httpx): 0.08-0.1 s at the exit of `faasgd train`, 0.01-0.02 s
    frozen (bench/updown.py times the whole commands). Everything else of the exit is as before: atexit handlers
    (the forkserver's, logging's), open files closed, stdio flushed (a closed stdout ends it quietly:
    faasgd.closed_stdout). Not in `main`, which tests and library
    callers call in a process that goes on: frozen objects are never collected."""
    code = quiet_when_closed(main)
    gc.freeze()
    return code


def fail(error, code: int) -> int:
    print(f"faasgd: error: {error}", file=sys.stderr)
    return code
