"""`./test.sh [MATRIX] [--target local|cluster] [--rounds N] [--dry-run] [--out DIR]`: batch runs."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numpy

from faasgd import __version__
from faasgd.batch.matrix import Matrix, load_matrix
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import ClusterTarget, LocalTarget, cap_message
from faasgd.errors import ConfigError, FaasgdError

DEFAULT_MATRIX = "bench/matrix/workers-period.yml"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="test.sh", description="Batch benchmark runs with tables and plots.")
    parser.add_argument("matrix", nargs="?", default=DEFAULT_MATRIX)
    parser.add_argument("--target", choices=("local", "cluster"), default="local")
    parser.add_argument("--rounds", type=int, default=None, help="default: the matrix file's rounds")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    parser.add_argument("--out", default=None, help="output folder (default results/<time>-<name>)")
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="seconds before a run counts as failed")
    parser.add_argument("-f", "--stack", default="stack.yml")
    parser.add_argument("--port", type=int, default=8080, help="local target: the gateway's port")
    parser.add_argument("--dir", default=".faasgd", help="local target: the runtime's folder")
    parser.add_argument("--no-deploy", action="store_true", help="cluster target: skip faas-cli deploy")
    return parser.parse_args(argv)


def versions() -> dict:
    out = {"faasgd": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
           "platform": platform.platform()}
    for name, argv in (("redis-server", ["redis-server", "--version"]), ("memcached", ["memcached", "-V"]),
                       ("git_commit", ["git", "rev-parse", "HEAD"])):
        if shutil.which(argv[0]):
            done = subprocess.run(argv, capture_output=True, text=True)
            out[name] = done.stdout.strip() if done.returncode == 0 else None
    return out


def dry_run(matrix: Matrix, rounds: int) -> None:
    print(f"{matrix.name}: {len(matrix.configurations)} configuration(s) x {rounds} round(s) = "
          f"{len(matrix.configurations) * rounds} run(s)")
    for configuration in matrix.configurations:
        print(f"  [{configuration.config_id}] {configuration.label}   ({json.dumps(configuration.values)})")
        message = cap_message(int(configuration.values.get("number_of_workers", 2)))
        if message:
            print(f"      note: {message}")


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        matrix = load_matrix(args.matrix)
        rounds = args.rounds or matrix.rounds
        if not 1 <= rounds <= 1000:
            raise ConfigError("rounds", f"must be in [1, 1000], got {rounds}")
        if args.dry_run:
            dry_run(matrix, rounds)
            return 0
        return run(args, matrix, rounds)
    except ConfigError as error:
        print(f"test.sh: error: {error}", file=sys.stderr)
        return 2
    except FaasgdError as error:
        print(f"test.sh: error: {error}", file=sys.stderr)
        return 1


def run(args, matrix: Matrix, rounds: int) -> int:
    from faasgd.batch import plots, report

    started = datetime.datetime.now()
    out = Path(args.out or f"results/{started:%Y%m%d-%H%M%S}-{matrix.name}")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.matrix, out / "matrix.yml")
    target = LocalTarget(args.stack, args.dir, args.port) if args.target == "local" else \
        ClusterTarget(args.stack, deploy=not args.no_deploy)
    print(f"{matrix.name}: {len(matrix.configurations)} configuration(s) x {rounds} round(s), target {target.name}, "
          f"output {out}", flush=True)
    target.start()
    try:
        runs = run_batch(matrix, target, rounds, args.run_timeout, lambda line: print(line, flush=True))
    finally:
        target.stop()
    failures = [{"config_id": r["config_id"], "configuration": r["configuration"], "round": r["round"],
                 "error": r.get("error")} for r in runs if r.get("state") != "done"]
    meta = {"name": matrix.name, "matrix_file": str(args.matrix), "matrix": matrix.source, "target": target.name,
            "rounds": rounds, "started_at": started.isoformat(timespec="seconds"),
            "finished_at": datetime.datetime.now().isoformat(timespec="seconds"), "versions": versions(),
            "seeds": sorted({r["config"]["seed"] for r in runs}), "failures": failures}
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
    (out / "runs.json").write_text(json.dumps(runs, indent=1, default=str))
    report.write_runs_csv(runs, out / "runs.csv")
    report.write_output_txt(runs, meta, out / "output.txt")
    written = plots.write_plots(runs, out)
    report.write_summary_md(runs, meta, out / "summary.md", written)
    print(f"wrote {out}/: runs.csv, output.txt, summary.md, {', '.join(written.values()) or 'no plots'}")
    if failures:
        print(f"{len(failures)} run(s) failed:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure['configuration']} round {failure['round']}: {failure['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
