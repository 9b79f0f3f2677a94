"""`faasgd` command line: train a job on this machine, read a job's status."""

from __future__ import annotations

import argparse
import json
import os
import sys

from faasgd import __version__, job
from faasgd.config import FIELDS, load_config
from faasgd.display import LiveProgress, summary, worker_line
from faasgd.errors import ConfigError, DataError, FaasgdError, StoreError

EXIT_FAILED, EXIT_INPUT, EXIT_STORE, EXIT_DATA = 1, 2, 3, 4
ALIASES = {"number_of_workers": ["--workers"], "store_url": ["--store"]}


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per config key (dashes for underscores); values are checked by load_config."""
    for name, field in FIELDS.items():
        flags = ["--" + name.replace("_", "-")] + ALIASES.get(name, [])
        parser.add_argument(*flags, dest=name, default=None, metavar=name.upper(),
                            help=f"(default {field.default!r})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="faasgd", description="Distributed Downpour SGD over Redis or Memcached.")
    parser.add_argument("--version", action="version", version=f"faasgd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="run a training job with worker processes on this machine")
    add_config_flags(train)
    train.add_argument("--json", action="store_true", help="print the result record as JSON on the last line")
    train.add_argument("--dry-run", action="store_true", help="validate and print the config; write nothing")

    status = sub.add_parser("status", help="show a job's state, progress and result")
    status.add_argument("job_id")
    status.add_argument("--store", "--store-url", dest="store_url", default=None)
    status.add_argument("--json", action="store_true")
    return parser


def cmd_train(args: argparse.Namespace) -> int:
    from faasgd.runner import prepare_job, run_processes

    overrides = {name: getattr(args, name) for name in FIELDS if getattr(args, name) is not None}
    config = load_config(os.environ, overrides)
    if args.dry_run:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    store, job_id = prepare_job(config)
    print(f"job {job_id}: {config.number_of_workers} worker(s), {config.dataset}, mode {config.mode}, "
          f"store {store.url}, target {config.target_accuracy}", flush=True)
    live = LiveProgress(config.max_epochs)
    last: dict = {}

    def on_progress(progress):
        last.update(progress)
        live(progress)

    result = run_processes(config, store, job_id, on_progress)
    print(summary(result, last))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    return 0 if result.get("state") == "done" else EXIT_FAILED


def cmd_status(args: argparse.Namespace) -> int:
    from faasgd.store import open_store

    config = load_config(os.environ, {"store_url": args.store_url} if args.store_url else {})
    status = job.read_status(open_store(config.store_url), args.job_id)
    progress = dict(enumerate(status["workers"]))
    if args.json:
        print(json.dumps(status, sort_keys=True))
    elif status["result"]:
        print(summary(status["result"], progress))
    else:
        print(f"job {args.job_id}: running")
        print("\n".join(worker_line(i, r, status["config"]["max_epochs"]) for i, r in progress.items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"train": cmd_train, "status": cmd_status}
    try:
        return handlers[args.command](args)
    except ConfigError as error:
        return fail(error, EXIT_INPUT)
    except StoreError as error:
        return fail(error, EXIT_STORE)
    except DataError as error:
        return fail(error, EXIT_DATA)
    except FaasgdError as error:
        return fail(error, EXIT_FAILED)
    except KeyboardInterrupt:
        return fail("interrupted", 130)


def fail(error, code: int) -> int:
    print(f"faasgd: error: {error}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
