"""k8s/bench's Job, its three steps run as written in job.yaml against the local runtime: the same commands, the
paths of the pod's volumes mapped to folders here (the basic-auth Secret to the runtime's secrets folder, the results
volume to a temporary one), $(RUN) expanded as the kubelet does. What the cluster adds (scheduling, the volume, the
image) is checked offline by tests/unit/repository/test_k8s_bench_manifests.py."""

import csv
import os
import re
import subprocess
import sys

import pytest
import yaml

from faasgd.local import credentials
from faasgd.local.services.stores import free_port
from faasgd.openfaas import TRAIN_FUNCTION, GatewayClient
from support import openfaas_bin
from support.paths import ROOT

pytestmark = pytest.mark.e2e

JOB = ROOT / "k8s" / "bench" / "job.yaml"
MATRIX = """
name: in-cluster-small
rounds: 1
fixed: {dataset: synthetic, train_samples: 3000, test_samples: 500, hidden_sizes: [32], max_epochs: 6,
        target_accuracy: 0.8}
matrix:
  number_of_workers: [1, 3]
  store: redis
"""
RUN = "faasgd-bench-x7k2p"  # a pod's name


def steps() -> list[dict]:
    spec = yaml.safe_load(JOB.read_text())["spec"]["template"]["spec"]
    return [*spec["initContainers"], *spec["containers"]]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    directory, port = tmp_path_factory.mktemp("runtime") / ".faasgd", free_port()
    up = subprocess.run([sys.executable, "-m", "faasgd.cli", "up", "--port", str(port), "--dir", str(directory),
                         "--filter", "emnist-*"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    yield {"url": f"http://127.0.0.1:{port}", "secrets": directory / "secrets"}
    subprocess.run([sys.executable, "-m", "faasgd.cli", "down", "--dir", str(directory)], cwd=ROOT, timeout=60)


def as_here(step: dict, folders: dict[str, str], env: dict[str, str]) -> list[str]:
    """The step's command with the pod's paths mapped and $(VAR) expanded from its environment, as the kubelet does."""
    mapped = []
    for word in step["command"] + step.get("args", []):
        word = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], word)
        for inside, here in folders.items():
            if word == inside or word.startswith(inside + "/"):
                word = here + word[len(inside):]
                break
        mapped.append(word)
    return mapped


def test_the_jobs_three_steps_run_a_batch_onto_the_results_volume(runtime, tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "matrix.yml").write_text(MATRIX)
    folders = {"/app/.venv/bin/python": sys.executable, "/app/test.sh": str(ROOT / "test.sh"),
               "/var/secrets/basic-auth": str(runtime["secrets"]), "/bench": str(tmp_path / "bench"),
               "/openfaas": str(tmp_path / "openfaas"), "/results": str(tmp_path / "results"), "/tmp": str(tmp_path)}
    said = []
    for step in steps():
        env = {e["name"]: e.get("value", "") for e in step["env"]}
        assert step["workingDir"] == "/app"
        env.update(OPENFAAS_URL=runtime["url"], RUN=RUN, HOME=str(tmp_path), MPLCONFIGDIR=str(tmp_path / "mpl"),
                   OPENFAAS_CONFIG=folders[env["OPENFAAS_CONFIG"]])
        done = subprocess.run(as_here(step, folders, env), capture_output=True, text=True, cwd=ROOT, timeout=600,
                              env={**os.environ, **env})
        assert done.returncode == 0, (step["name"], done.stdout[-3000:], done.stderr[-3000:])
        said.append(done.stdout)
    assert [s["name"] for s in steps()] == ["prepare", "bench", "report"]
    assert "emnist-train: 2 replica(s) available" in said[0] and "2 configuration(s) x 1 round(s)" in said[0]
    # the login kept as faas-cli keeps it, readable by its owner only
    login = tmp_path / "openfaas" / "config.yml"
    assert oct(login.stat().st_mode & 0o777) == "0o600"
    results = tmp_path / "results"
    with open(results / "runs" / RUN / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["number_of_workers"] for r in rows) == ["1", "3"] and {r["state"] for r in rows} == {"done"}
    assert (results / "results.sqlite").stat().st_size > 0
    # scaled through the gateway (--scale-with gateway): the last configuration's replicas, not stack.yml's 2
    last = rows[-1]["number_of_workers"]
    gateway = GatewayClient(runtime["url"], auth=credentials.read(runtime["secrets"]))
    assert gateway.function_status(TRAIN_FUNCTION)["replicas"] == int(last)
    # the post-job: index.md's row, latest, the summary in its log
    index = (results / "index.md").read_text()
    assert re.search(rf"\| {RUN} \| [\d-]+ [\d:]+ \| 2 \| 2 \| 2 \| 0 \| \[summary\]\(runs/{RUN}/summary.md\) \|", index)
    assert os.readlink(results / "latest") == f"runs/{RUN}" and (results / "latest" / "runs.csv").is_file()
    summary = (results / "runs" / RUN / "summary.md").read_text()
    assert summary.strip() in said[2]
    assert "--rounds 1 --target cluster --no-deploy --scale-with gateway\n" in summary  # how to repeat it


def test_the_real_faas_cli_reads_the_login_prepare_kept(runtime, tmp_path):
    faas_cli = openfaas_bin.find("faas-cli")
    if faas_cli is None:
        pytest.skip(openfaas_bin.missing_reason("faas-cli"))
    (tmp_path / "matrix.yml").write_text(MATRIX)
    env = {**os.environ, "OPENFAAS_URL": runtime["url"], "OPENFAAS_CONFIG": str(tmp_path / "openfaas")}
    prepare = subprocess.run([sys.executable, "-m", "faasgd.batch.workflow", "prepare", "--matrix",
                              str(tmp_path / "matrix.yml"), "--basic-auth-dir", str(runtime["secrets"])],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert prepare.returncode == 0, prepare.stderr
    listed = subprocess.run([faas_cli, "list", "--gateway", runtime["url"]], capture_output=True, text=True,
                            timeout=60, env=env)
    assert listed.returncode == 0 and TRAIN_FUNCTION in listed.stdout, listed.stdout + listed.stderr
    password = (runtime["secrets"] / "basic-auth-password").read_text().strip()
    assert password not in prepare.stdout + prepare.stderr


def test_prepare_refuses_a_wrong_login_at_once_naming_it_and_echoing_no_secret(runtime, tmp_path):
    (tmp_path / "matrix.yml").write_text(MATRIX)
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "basic-auth-user").write_text("admin")
    (tmp_path / "auth" / "basic-auth-password").write_text("not-the-password-4f1e")
    env = {**os.environ, "OPENFAAS_URL": runtime["url"], "OPENFAAS_CONFIG": str(tmp_path / "openfaas")}
    done = subprocess.run([sys.executable, "-m", "faasgd.batch.workflow", "prepare", "--matrix",
                           str(tmp_path / "matrix.yml"), "--basic-auth-dir", str(tmp_path / "auth"), "--timeout", "60"],
                          capture_output=True, text=True, cwd=ROOT, timeout=30, env=env)
    assert done.returncode == 1 and "refused the login from the basic-auth Secret" in done.stderr, done.stderr
    assert "not-the-password-4f1e" not in done.stdout + done.stderr
