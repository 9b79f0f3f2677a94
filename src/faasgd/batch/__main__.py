"""`./test.sh [MATRIX] [--target local|cluster] [--rounds N] [--max-runs N] [--dry-run] [--out DIR] [--mlflow [URI]]`:
batch runs (`--mlflow`: the batch as one MLflow experiment, experiment.py).

Bad input (a flag, the matrix, the target's settings, the output folder) exits 2 with one line
naming the field, before anything is written. Everything printed or written is redacted (redact.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import numpy

from faasgd import __version__
from faasgd.api import results_store
from faasgd.batch.matrix import DEFAULT_MAX_RUNS, Matrix, parse_matrix_text, read_matrix_text
from faasgd.batch.bounds import MAX_RUNS, max_runs
from faasgd.batch.experiment import Experiment, tracking_uri
from faasgd.batch.outputs import make_folder, output_folder, write_matrix_copy, write_outputs
from faasgd.batch.record import KEPT_BY_WORKLOAD, BatchRecord
from faasgd.batch.redact import Redactor
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import ClusterTarget, LocalTarget, cap_message
from faasgd.closed_stdout import quiet_when_closed, stdio_closed
from faasgd.errors import ConfigError, FaasgdError

DEFAULT_MATRIX = "bench/matrix/workers-period.yml"


class OneLineParser(argparse.ArgumentParser):
    """Bad flags: one line naming the flag, exit 2 (the usage is in --help)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_args(argv):
    parser = OneLineParser(prog="test.sh", description="Batch benchmark runs with tables and plots.")
    parser.add_argument("matrix", nargs="?", default=DEFAULT_MATRIX)
    parser.add_argument("--target", choices=("local", "cluster"), default="local")
    parser.add_argument("--rounds", type=int, default=None, help="default: the matrix file's rounds")
    parser.add_argument("--max-runs", default=str(DEFAULT_MAX_RUNS), help="refuse a batch of more runs "
                        f"(configurations x rounds; default {DEFAULT_MAX_RUNS}, at most {MAX_RUNS:,})")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    parser.add_argument("--out", default=None, help="output folder (default results/<time>-<name>)")
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="seconds before a run counts as failed")
    parser.add_argument("-f", "--stack", default="stack.yml")
    parser.add_argument("--port", type=int, default=8080, help="local target: the gateway's port")
    parser.add_argument("--dir", default=".faasgd", help="local target: the runtime's folder")
    parser.add_argument("--no-deploy", action="store_true", help="cluster target: skip faas-cli deploy")
    parser.add_argument("--scale-with", choices=("kubectl", "gateway"), default="kubectl",
                        help="cluster target: how emnist-train is scaled per configuration (kubectl scale, or the "
                             "gateway's /system/scale-function as k8s/bench's in-cluster Job does)")
    parser.add_argument("--results-db", default=None, help="the results database every run is added to (default "
                        f"${results_store.ENV}, else {results_store.DEFAULT_PATH}; 'none': not written)")
    parser.add_argument("--mlflow", nargs="?", const="", default=None, metavar="URI",
                        help="the batch as one MLflow experiment: a parent run per configuration, its rounds as "
                             "children (URI: a tracking server or sqlite:///FILE; alone: $MLFLOW_TRACKING_URI)")
    return parser.parse_args(argv)


def check_flags(args) -> None:
    if not args.run_timeout > 0:
        raise ConfigError("run_timeout", f"must be a number of seconds > 0, got {args.run_timeout:g}")
    if not 1 <= args.port <= 65535:
        raise ConfigError("port", f"must be a TCP port in [1, 65535], got {args.port}")
    args.max_runs = max_runs(args.max_runs)  # bounded before the matrix is read


def target_flags(args) -> list[str]:
    """The cluster target's flags that change how a batch runs, for summary.md's line that repeats it."""
    if args.target != "cluster":
        return []
    return [*(["--no-deploy"] if args.no_deploy else []),
            *(["--scale-with", args.scale_with] if args.scale_with != "kubectl" else [])]


def versions() -> dict:
    out = {"faasgd": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
           "platform": platform.platform()}
    for name, argv in (("redis-server", ["redis-server", "--version"]), ("memcached", ["memcached", "-V"]),
                       ("git_commit", ["git", "rev-parse", "HEAD"])):
        if shutil.which(argv[0]):
            done = subprocess.run(argv, capture_output=True, text=True)
            out[name] = done.stdout.strip() if done.returncode == 0 else None
    return out


def dry_run(matrix: Matrix, say) -> None:
    say(f"{matrix.name}: {len(matrix.configurations)} configuration(s) x {matrix.rounds} round(s) = "
        f"{len(matrix.configurations) * matrix.rounds} run(s)")
    for configuration in matrix.configurations:
        say(f"  [{configuration.config_id}] {configuration.label}   ({json.dumps(configuration.values)})")
        message = matrix.workload == "emnist" and cap_message(int(configuration.values.get("number_of_workers", 2)))
        if message:
            say(f"      note: {message}")


def main(argv=None) -> int:
    args = parse_args(argv)
    redactor = Redactor()
    try:
        check_flags(args)
        text = read_matrix_text(args.matrix)
        redactor = Redactor.of(text)  # before parsing: a parse error may quote a value
        matrix = parse_matrix_text(text, Path(args.matrix).stem, args.rounds, args.max_runs)
        args.mlflow = tracking_uri(args.mlflow, matrix.workload)
        if args.dry_run:
            if args.out is not None:
                output_folder(args.out, matrix.name, datetime.datetime.now())  # refused as a real run would be
            dry_run(matrix, redactor.say)
            return 0
        return run(args, matrix, text, redactor)
    except ConfigError as error:
        redactor.say(f"test.sh: error: {error}", error=True)
        return 2
    except FaasgdError as error:
        redactor.say(f"test.sh: error: {error}", error=True)
        return 1
    except Exception as error:  # noqa: BLE001 (the traceback, redacted: it may quote a store URL)
        if isinstance(error, BrokenPipeError) and stdio_closed():
            raise  # the reader went away: the batch ends quietly (faasgd.closed_stdout)
        redactor.say("".join(traceback.format_exc()).rstrip(), error=True)
        return 1


def run(args, matrix: Matrix, matrix_text: str, redactor: Redactor) -> int:
    """Every check first (target, output folder), then the folder, then the runs; outputs redacted."""
    say = redactor.say
    started = datetime.datetime.now()
    target = LocalTarget(args.stack, args.dir, args.port) if args.target == "local" else \
        ClusterTarget(args.stack, deploy=not args.no_deploy, scale_with=args.scale_with)
    out = output_folder(args.out, matrix.name, started)
    make_folder(out)
    write_matrix_copy(out, matrix_text, redactor)
    say(f"{matrix.name}: {len(matrix.configurations)} configuration(s) x {matrix.rounds} round(s), "
        f"target {target.name}, output {out}")
    db_path = args.results_db or results_store.default_path()
    record = BatchRecord(None if db_path == "none" else db_path, {
        "name": matrix.name, "workload": matrix.workload, "target": target.name, "folder": str(out),
        "matrix": matrix.source, "rounds": matrix.rounds, "started_at": started.isoformat(timespec="seconds")},
        redactor, say, KEPT_BY_WORKLOAD[matrix.workload])
    experiment = None if args.mlflow is None else Experiment(args.mlflow, matrix, {
        "name": matrix.name, "target": target.name, "folder": str(out), "rounds": matrix.rounds,
        "started_at": started.isoformat(sep=" ", timespec="seconds")}, redactor, say)
    target.start()
    try:
        runs = run_batch(matrix, target, matrix.rounds, args.run_timeout, say, on_run=record.run,
                         on_job=experiment.on_job if experiment is not None else None)
    finally:
        target.stop()
    if experiment is not None:
        experiment.finish()
    failures = [{"config_id": r["config_id"], "configuration": r["configuration"], "round": r["round"],
                 "error": r.get("error")} for r in runs if r.get("state") != "done"]
    meta = {"name": matrix.name, "workload": matrix.workload, "matrix_file": str(args.matrix), "matrix": matrix.source,
            "target": target.name, "target_flags": target_flags(args),
            "rounds": matrix.rounds, "started_at": started.isoformat(timespec="seconds"),
            "finished_at": datetime.datetime.now().isoformat(timespec="seconds"), "versions": versions(),
            "seeds": sorted({r["config"]["seed"] for r in runs}), "failures": failures}
    if matrix.workload == "emnist":
        meta["prices"] = matrix.prices.to_dict()  # what runs.csv's costs are priced at
    record.finish({**meta, "folder": str(out)})
    written = write_outputs(out, runs, meta, redactor)
    say(f"wrote {out}/: runs.csv, output.txt, summary.md, {', '.join(written.values()) or 'no plots'}")
    if failures:
        say(f"{len(failures)} run(s) failed:", error=True)
        for failure in failures:
            say(f"  {failure['configuration']} round {failure['round']}: {failure['error']}", error=True)
        return 1
    return 1 if experiment is not None and experiment.failed else 0


if __name__ == "__main__":
    sys.exit(quiet_when_closed(main))
