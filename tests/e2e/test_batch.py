"""./test.sh end to end on the local target: a small real matrix, its tables, CSV and plots; a store
password kept out of every output; bad matrices refused at once, writing nothing."""

import csv
import json
import secrets
import subprocess
import time
from pathlib import Path

import pandas
import pytest
import yaml

from faasgd.api import results_store
from faasgd.local.services.stores import free_port, start_redis
from support.paths import ROOT

pytestmark = pytest.mark.e2e

SMALL = """
name: small
rounds: 2
fixed: {dataset: synthetic, train_samples: 4000, test_samples: 500, hidden_sizes: [32], max_epochs: 8,
        target_accuracy: 0.85}
matrix:
  number_of_workers: [1, 2]
  store: redis
"""


def run_test_sh(*args, timeout=600):
    return subprocess.run(["./test.sh", *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """One local runtime for the tests that need no runtime of their own: test.sh finds it up (`--port`,
    `--dir`: these flags) and leaves it up; stopped at the end of the module."""
    directory, port = tmp_path_factory.mktemp("runtime") / ".faasgd", free_port()
    up = subprocess.run([sys_python(), "-m", "faasgd.cli", "up", "--port", str(port), "--dir", str(directory)],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert up.returncode == 0, up.stdout + up.stderr
    yield ["--port", port, "--dir", directory]
    subprocess.run([sys_python(), "-m", "faasgd.cli", "down", "--dir", str(directory)], cwd=ROOT, timeout=60)


def test_dry_run_lists_the_runs():
    run = run_test_sh("bench/matrix/workers-period.yml", "--dry-run")
    assert run.returncode == 0
    assert "6 configuration(s) x 3 round(s) = 18 run(s)" in run.stdout
    assert "number_of_workers=4 n_fetch=10 n_push=10" in run.stdout


def test_bad_matrix_exits_naming_the_key(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("matrix: {number_of_workers: [1, 2], n_fetsh: [1]}\n")
    run = run_test_sh(bad, "--dry-run")
    assert run.returncode == 2 and "matrix.n_fetsh" in run.stderr
    bad.write_text("matrix: {batch_size: [0]}\n")
    run = run_test_sh(bad, "--dry-run")
    assert run.returncode == 2 and "batch_size" in run.stderr


def test_small_matrix_writes_csv_tables_and_plots(tmp_path):
    matrix = tmp_path / "small.yml"
    matrix.write_text(SMALL)
    out = tmp_path / "out"
    run = run_test_sh(matrix, "--out", out, "--port", free_port(), "--dir", tmp_path / ".faasgd",
                      "--results-db", tmp_path / "results.sqlite")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count("] number_of_workers=") == 4  # a progress line per run
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    assert sorted((r["number_of_workers"], r["round"]) for r in rows) == [("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")]
    assert all(r["state"] == "done" and float(r["time_to_target_s"]) > 0 for r in rows)
    assert {r["seed"] for r in rows} == {"0", "1"}  # round r uses seed + r - 1
    assert all(r["placement"].startswith("emnist-train-") for r in rows)
    # as a researcher reads it: every column keeps its name; each run says its clock and what it cost
    table = pandas.read_csv(out / "runs.csv")
    assert table.columns.is_unique and "store.1" not in table.columns
    assert set(table["clock"]) == {"redis TIME (1 µs)"} and (table["wall_s"] > 0).all()
    assert (table["requests"] >= table["number_of_workers"] + 1).all()
    # the batch's first run started every replica it used (cold); later runs reuse warm ones (emnist-setup's at least)
    first = table.sort_values(["round", "config_id"]).iloc[0]
    assert first["cold_starts"] == first["requests"], first
    assert table["cold_starts"].sum() < table["requests"].sum()
    assert (table["billed_gb_s"] > 0).all() and (table["cost_usd"] > table["cost_faas_usd"]).all()
    output = (out / "output.txt").read_text()
    for label in ("number_of_workers=1", "number_of_workers=2"):
        assert f"== {label} ==" in output
    assert output.count("Avg") == 2 and output.count("Stdev") == 2
    times = sorted(float(r["time_to_target_s"]) for r in rows if r["number_of_workers"] == "1")
    assert f"{sum(times) / 2:.2f}" in output  # the Avg row of workers=1
    summary = (out / "summary.md").read_text()
    assert "accuracy_vs_time.png" in summary and "small" in summary
    for png in ("accuracy_vs_time.png", "time_vs_workers.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    meta = json.loads((out / "meta.json").read_text())
    assert meta["rounds"] == 2 and meta["seeds"] == [0, 1] and meta["versions"]["faasgd"]
    assert (out / "matrix.yml").read_text() == SMALL
    assert not (tmp_path / ".faasgd" / "state.json").exists()  # the runtime it started is down
    # resources: a column per figure, a profile plot per run, every run in the results database
    assert all(float(r["cpu_s"]) > 0 and int(r["tx_bytes"]) > 0 and float(r["rss_peak_mb"]) > 0 for r in rows)
    assert all((out / "profiles" / f"run-{i:03d}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for i in range(1, 5))
    db = results_store.open_db(tmp_path / "results.sqlite", create=False)
    assert sorted(r["job_id"] for r in results_store.runs(db)) == sorted(r["job_id"] for r in rows)


def test_a_failed_run_is_recorded_and_the_batch_exits_nonzero(tmp_path):
    matrix = tmp_path / "failing.yml"
    matrix.write_text(SMALL.replace("rounds: 2", "rounds: 1").replace(
        "store: redis", "store: [redis, gone]").replace("[1, 2]", "1"))
    out = tmp_path / "out"
    gone = f"gone=redis://127.0.0.1:{free_port()}/0"  # a store the functions have, where nothing listens
    run = run_test_sh(matrix, "--out", out, "--port", free_port(), "--dir", tmp_path / ".faasgd",
                      "--stack", stack_with(tmp_path, stores=f"redis=redis://redis.openfaas-fn:6379/0,{gone}"))
    assert run.returncode == 1
    assert "1 run(s) failed" in run.stderr and "store unavailable" in run.stderr
    with open(out / "runs.csv") as f:
        states = [r["state"] for r in csv.DictReader(f)]
    assert states == ["done", "failed"]  # both runs recorded; the failure did not stop the batch


def stack_with(tmp_path, **environment: str) -> Path:
    """stack.yml with these functions' environment values (handlers by absolute path)."""
    stack = yaml.safe_load((ROOT / "stack.yml").read_text())
    for function in stack["functions"].values():
        function["handler"] = str(ROOT / function["handler"])
        function["environment"] = {**function["environment"], **environment}
    path = tmp_path / "stack.yml"
    path.write_text(yaml.safe_dump(stack))
    return path


def test_a_store_password_is_in_no_output_file_and_no_printed_line(tmp_path):
    """A batch whose functions' own store is a password-protected Redis (stack.yml's store_url: a matrix
    names stores, never locates them): the runs use the password (they finish), and no file test.sh
    writes, nor any line it prints, holds it."""
    password = f"pw-{secrets.token_hex(12)}"
    server = start_redis(password=password)
    try:
        url = f"redis://:{password}@127.0.0.1:{server.port}/0"
        matrix = tmp_path / "secret.yml"
        matrix.write_text(SMALL.replace("rounds: 2", "rounds: 1").replace("[1, 2]", "[1]")
                          .replace("store: redis", "store: default") + f"description: against {url}\n")
        out = tmp_path / "out"
        run = run_test_sh(matrix, "--out", out, "--port", free_port(), "--dir", tmp_path / ".faasgd",
                          "--stack", stack_with(tmp_path, store_url=url), "--results-db", out / "results.sqlite")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        files = [path for path in out.rglob("*") if path.is_file()]
        assert {"runs.csv", "runs.json", "meta.json", "summary.md", "output.txt", "matrix.yml", "results.sqlite"} \
            <= {p.name for p in files}
        for path in files:
            assert password.encode() not in path.read_bytes(), path.name
        assert password not in run.stdout and password not in run.stderr
        with open(out / "runs.csv") as f:
            rows = list(csv.DictReader(f))
        masked = f"redis://:***@127.0.0.1:{server.port}/0"
        assert [(r["state"], r["store"], r["store_url"]) for r in rows] == [("done", "default", masked)]
        assert masked in (out / "matrix.yml").read_text() and masked in json.loads((out / "meta.json").read_text())[
            "matrix"]["description"]
    finally:
        server.stop()


BAD = {
    "../evil": ("name: ../evil\nfixed: {dataset: synthetic}\n", [], "name"),
    "10^10 runs": ("name: huge\nmatrix:\n" + "".join(f"  {key}: [{', '.join(map(str, range(1, 11)))}]\n" for key in (
        "batch_size", "n_fetch", "n_push", "max_epochs", "seed", "lease_s", "train_samples", "test_samples",
        "number_of_workers", "hidden_sizes")), [], "runs"),
    "rounds 0": ("name: ok\nfixed: {dataset: synthetic}\n", ["--rounds", "0"], "rounds"),
    "rounds -3": ("name: ok\nfixed: {dataset: synthetic}\n", ["--rounds", "-3"], "rounds"),
    "over --max-runs": ("name: ok\nrounds: 3\nmatrix: {number_of_workers: [1, 2]}\n", ["--max-runs", "5"], "runs"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_matrix_exits_2_at_once_in_one_line_and_writes_nothing(tmp_path, case):
    text, flags, field = BAD[case]
    matrix = tmp_path / "bad.yml"
    matrix.write_text(text)
    results = sorted((ROOT / "results").iterdir()) if (ROOT / "results").exists() else []
    for out_flags in (["--out", tmp_path / "out"], []):  # where the user says, and the default under results/
        started = time.monotonic()
        run = run_test_sh(matrix, *flags, *out_flags, "--port", free_port(), "--dir", tmp_path / ".faasgd", timeout=60)
        assert run.returncode == 2 and time.monotonic() - started < 30, run.stderr
        assert run.stderr.startswith(f"test.sh: error: {field}: ") and run.stderr.count("\n") == 1, run.stderr
        assert run.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yml"]
    assert (sorted((ROOT / "results").iterdir()) if (ROOT / "results").exists() else []) == results


def test_cluster_target_drives_faas_cli_and_kubectl(tmp_path):
    """--target cluster against the local runtime standing in for a cluster: the real faas-cli when it
    is found (logged in as `faas-cli login` does; its deploy replaces the replicas), else a stand-in
    that only logs; kubectl is always a stand-in (no Kubernetes here) that scales through
    `faasgd scale`, which logs in with the runtime's login, as kubectl would with its kubeconfig."""
    import os

    from support.openfaas_bin import find

    directory, port, home = tmp_path / ".faasgd", free_port(), tmp_path / "home"
    up = subprocess.run([sys_python(), "-m", "faasgd.cli", "up", "--port", str(port), "--dir", str(directory)],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert up.returncode == 0, up.stderr
    state = json.loads((directory / "state.json").read_text())
    bin_dir, calls, real = tmp_path / "bin", tmp_path / "calls.log", find("faas-cli")
    bin_dir.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OPENFAAS_URL": state["gateway_url"],
           "HOME": str(home)}
    log_in(real, state, directory, home, env)
    (bin_dir / "faas-cli").write_text(f'#!/bin/sh\necho "faas-cli $*" >> {calls}\n' +
                                      (f'exec {real} "$@"\n' if real else ""))
    (bin_dir / "kubectl").write_text(
        f'#!/bin/sh\necho "kubectl $*" >> {calls}\n'
        f'n=$(echo "$*" | sed -n "s/.*--replicas=\\([0-9]*\\).*/\\1/p")\n'
        f'exec {sys_python()} -m faasgd.cli scale emnist-train --replicas "$n" --dir {directory}\n')
    for tool in ("faas-cli", "kubectl"):
        (bin_dir / tool).chmod(0o755)
    matrix = tmp_path / "cluster.yml"
    matrix.write_text(SMALL.replace("rounds: 2", "rounds: 1"))  # the store by name: the functions' own redis
    try:
        run = subprocess.run(["./test.sh", str(matrix), "--target", "cluster", "--out", str(tmp_path / "out")],
                             capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        logged = calls.read_text().splitlines()
        assert logged[0].startswith("faas-cli deploy -f stack.yml --gateway ")
        assert [l for l in logged if l.startswith("kubectl")] == [
            "kubectl scale -n openfaas-fn deployment/emnist-train --replicas=1",
            "kubectl scale -n openfaas-fn deployment/emnist-train --replicas=2"]
        with open(tmp_path / "out" / "runs.csv") as f:
            assert [r["state"] for r in csv.DictReader(f)] == ["done", "done"]
        if real:  # the real deploy replaced the stack's replicas with new ones
            from faasgd.local.lifecycle import control

            serving = control.client(state).function_status("emnist-setup")["pids"]
            assert serving and set(serving).isdisjoint(r["pid"] for r in state["replicas"])
    finally:
        subprocess.run([sys_python(), "-m", "faasgd.cli", "down", "--dir", str(directory)], cwd=ROOT, timeout=60)


def log_in(faas_cli, state, directory, home, env):
    """`faas-cli login` with the runtime's login (written as faas-cli writes it when there is no faas-cli)."""
    password = (directory / "secrets" / "basic-auth-password").read_text()
    if faas_cli:
        done = subprocess.run([faas_cli, "login", "--gateway", state["gateway_url"], "-u", "admin",
                               "--password-stdin"], input=password, capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    import base64

    (home / ".openfaas").mkdir(parents=True)
    token = base64.b64encode(f"admin:{password}".encode()).decode()
    (home / ".openfaas" / "config.yml").write_text(
        f"auths:\n- gateway: {state['gateway_url']}\n  auth: basic\n  token: {token}\n")


def sys_python():
    import sys

    return sys.executable


LAMBDAML = """
name: lambdaml
rounds: 1
fixed: {dataset: higgs-like, model: lr, train_samples: 300, validation_samples: 60, test_samples: 100,
        batch_size: 32, max_epochs: 2, target_accuracy: 1.0, learning_rate: 0.5, number_of_workers: 2}
matrix:
  algorithm: [model_avg, admm]
  sync: reduce_scatter
  local_steps: 2
  store: memcached
"""


def test_a_matrix_of_lambdamls_algorithms_runs_and_records_rounds_and_bytes(tmp_path, runtime):
    matrix = tmp_path / "lambdaml.yml"
    matrix.write_text(LAMBDAML)
    out = tmp_path / "out"
    run = run_test_sh(matrix, "--out", out, *runtime, "--results-db", "none")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["algorithm"] for r in rows) == ["admm", "model_avg"]
    assert all(r["state"] == "done" and r["sync"] == "reduce_scatter" for r in rows)
    assert {r["algorithm"]: int(r["rounds"]) for r in rows} == {"admm": 8, "model_avg": 4}  # 2 epochs of 4 / 2 rounds
    assert all(int(r["round_bytes_read"]) > 0 and float(r["barrier_wait_s"]) >= 0 for r in rows)


STACKING = """
name: stacking-small
workload: stacking
rounds: 1
fixed: {n_samples: 60, n_features: 16, trainers_num: 2, seed: 5, store: memcached}
matrix:
  transfer: [inline, store]
"""


def test_a_stacking_matrix_runs_through_the_driver_into_the_csv_and_the_results_store(tmp_path, runtime):
    """On the runtime the LambdaML matrix ran on (its startup is most of a small batch's time)."""
    matrix = tmp_path / "stacking.yml"
    matrix.write_text(STACKING)
    out = tmp_path / "out"
    run = run_test_sh(matrix, "--out", out, *runtime, "--results-db", tmp_path / "results.sqlite")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["transfer"], r["trainers_num"], r["seed"], r["state"]) for r in rows] == [
        ("inline", "2", "5", "done"), ("store", "2", "5", "done")]
    for row in rows:
        scores = [float(s) for s in row["base_scores"].split(",")]
        assert len(scores) == 2 and float(row["best_base_score"]) == max(scores)
        assert 0 < float(row["ensemble_score"]) <= 1 and int(row["call_retries"]) == 0
        phases = [float(row[k]) for k in ("upload_s", "train_s", "reduce_s", "meta_train_s")]
        assert all(p > 0 for p in phases) and sum(phases) <= float(row["total_s"])
    assert rows[0]["ensemble_score"] == rows[1]["ensemble_score"]  # the same job, whichever way objects travel
    assert (out / "phases.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    db = results_store.open_db(tmp_path / "results.sqlite", create=False)
    stored = results_store.runs(db)
    assert [(r["job_id"], r["state"], r["transfer"]) for r in stored] == [
        (row["job_id"], "done", row["transfer"]) for row in rows]
    assert all(r["job_id"].startswith("s") and r["total_s"] > 0 for r in stored)
