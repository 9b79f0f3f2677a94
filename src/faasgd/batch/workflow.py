"""k8s/bench's in-cluster benchmark, Kubebench's three steps as the commands its Job's pod runs in order
(docs/tutorials/cluster.md, its step 7):

1. `python -m faasgd.batch.workflow prepare` (the pre-job): the gateway's login from the mounted `basic-auth`
   Secret kept as `faas-cli login` keeps it, the gateway answering with it and emnist-train available, the matrix
   read and counted. Anything missing fails the pod here, before a run starts.
2. `./test.sh MATRIX --target cluster --no-deploy --scale-with gateway --out RESULTS/runs/RUN --results-db
   RESULTS/results.sqlite` (the job): the batch, its tables and plots on the results volume.
3. `python -m faasgd.batch.workflow report` (the post-job): RESULTS/index.md (one row per batch on the volume),
   RESULTS/latest pointing at this one, and its summary printed to the pod's log (`kubectl logs ... -c report`).

Why one pod with init containers and not three Jobs or an Argo workflow (Kubebench's engine): init containers run
in order and each must succeed before the next starts, which is all the order three steps need, with no controller
to install; the pod's steps share the results volume and the login's emptyDir.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import Counter
from pathlib import Path

from faasgd.batch.matrix import parse_matrix_text, read_matrix_text
from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import credentials
from faasgd.openfaas import TRAIN_FUNCTION, GatewayClient

BASIC_AUTH_DIR = "/var/secrets/basic-auth"  # the gateway's Secret `basic-auth`, mounted by k8s/bench/job.yaml
POLL_S = 2.0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m faasgd.batch.workflow")
    steps = parser.add_subparsers(dest="step", required=True)
    prepare = steps.add_parser("prepare", help="the pre-job: login, gateway and emnist-train ready, matrix checked")
    prepare.add_argument("--gateway", default=None, help="default $OPENFAAS_URL")
    prepare.add_argument("--basic-auth-dir", default=BASIC_AUTH_DIR,
                         help="the folder holding basic-auth-user and basic-auth-password")
    prepare.add_argument("--config-dir", default=None, help="where faas-cli's config.yml goes (default "
                                                            "$OPENFAAS_CONFIG)")
    prepare.add_argument("--matrix", required=True)
    prepare.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the gateway")
    report = steps.add_parser("report", help="the post-job: index.md, latest, the summary in the log")
    report.add_argument("--results", required=True, help="the results volume")
    report.add_argument("--run", required=True, help="the batch's folder under RESULTS/runs")
    return parser.parse_args(argv)


def prepare(args, say=print, sleep=time.sleep, clock=time.monotonic) -> None:
    url = args.gateway or os.environ.get("OPENFAAS_URL")
    if not url:
        raise ConfigError("OPENFAAS_URL", "set it (or --gateway) to the gateway the batch runs through")
    folder = args.config_dir or os.environ.get("OPENFAAS_CONFIG")
    if not folder:
        raise ConfigError("OPENFAAS_CONFIG", "set it (or --config-dir) to where the login is kept for test.sh")
    if not args.timeout > 0:
        raise ConfigError("timeout", f"must be a number of seconds > 0, got {args.timeout:g}")
    matrix = parse_matrix_text(read_matrix_text(args.matrix), Path(args.matrix).stem)  # refused before any wait
    login = credentials.read(args.basic_auth_dir)
    if login is None:
        raise ConfigError("basic_auth_dir", f"no basic-auth-user and basic-auth-password in {args.basic_auth_dir} "
                                            "(the gateway's Secret basic-auth, mounted there)")
    credentials.save_faas_cli_login(url, login, folder)
    gateway = GatewayClient(url, timeout_s=10, auth=credentials.faas_cli_login(url, {"OPENFAAS_CONFIG": folder}))
    status = wait_available(gateway, args.timeout, sleep, clock)
    say(f"prepare: {url} answers with the login kept in {folder}/config.yml; {TRAIN_FUNCTION}: "
        f"{status['availableReplicas']} replica(s) available")
    say(f"prepare: {matrix.name}: {len(matrix.configurations)} configuration(s) x {matrix.rounds} round(s)")


def wait_available(gateway: GatewayClient, timeout_s: float, sleep, clock) -> dict:
    """emnist-train's status once the gateway shows a replica of it available; FaasgdError naming the last
    answer at the deadline (a refused login ends the wait at once: waiting does not mend it)."""
    deadline, last = clock() + timeout_s, "no answer"
    while True:
        try:
            status = gateway.function_status(TRAIN_FUNCTION)
            if status.get("availableReplicas", 0) >= 1:
                return status
            last = f"{status.get('availableReplicas', 0)} replica(s) available"
        except FaasgdError as error:
            if getattr(error, "http_status", None) in (401, 403):
                raise FaasgdError(f"{gateway.url} refused the login from the basic-auth Secret: {error}") from None
            last = str(error)
        if clock() >= deadline:
            raise FaasgdError(f"{TRAIN_FUNCTION} not available through {gateway.url} after {timeout_s:g} s: {last}")
        sleep(POLL_S)


def batch_row(folder: Path) -> str | None:
    """A batch folder's row of index.md, or None when it holds no runs.csv (a batch that never ran)."""
    try:
        with open(folder / "runs.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        return None
    states = Counter(row.get("state", "") for row in rows)
    configurations = len({row.get("config_id") for row in rows})
    ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime((folder / "runs.csv").stat().st_mtime))
    summary = f"[summary](runs/{folder.name}/summary.md)" if (folder / "summary.md").is_file() else ""
    return (f"| {folder.name} | {ended} | {configurations} | {len(rows)} | {states.get('done', 0)} | "
            f"{len(rows) - states.get('done', 0)} | {summary} |")


def report(args, say=print) -> None:
    results = Path(args.results)
    run = results / "runs" / args.run
    if not (run / "runs.csv").is_file():
        raise FaasgdError(f"{run}: no runs.csv (the batch step wrote nothing there)")
    folders = sorted((p for p in (results / "runs").iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    rows = [row for row in map(batch_row, folders) if row]
    index = ["# faasgd batches on this volume", "",
             "| batch | ended (UTC) | configurations | runs | done | not done | |", "|---|---|---|---|---|---|---|",
             *rows, ""]
    temporary = results / ".index.md.tmp"
    temporary.write_text("\n".join(index))
    os.replace(temporary, results / "index.md")
    link = results / ".latest.tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(Path("runs") / args.run)
    os.replace(link, results / "latest")
    say(f"report: {len(rows)} batch(es) in {results}/index.md; latest -> runs/{args.run}")
    summary = run / "summary.md"
    if summary.is_file():
        say(summary.read_text().rstrip())


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        (prepare if args.step == "prepare" else report)(args)
    except ConfigError as error:
        print(f"workflow {args.step}: error: {error}", file=sys.stderr)
        return 2
    except FaasgdError as error:
        print(f"workflow {args.step}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
