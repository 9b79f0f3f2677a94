"""k8s/bench/ (the in-cluster batch, Kubebench's workflow): rendered by `kubectl kustomize`, every resource valid
under kubernetes-validate --strict, and the Job, its volumes, its image and the matrix it mounts agreeing with each
other. Its steps' commands run against the local runtime in tests/e2e/test_k8s_bench.py."""

import json
import re
import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml

from faasgd.batch.matrix import parse_matrix_text
from support.paths import ROOT

BENCH = ROOT / "k8s" / "bench"
OLDEST = "1.29.0"
NEWEST = ".".join(kubernetes_validate.latest_version().split(".")[:2]) + ".0"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (kubectl kustomize)")


@pytest.fixture(scope="module")
def rendered():
    done = subprocess.run(["kubectl", "kustomize", str(BENCH)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(done.stdout) if doc}


def test_it_renders_the_job_its_volume_its_matrix_and_the_dashboard_in_the_gateways_namespace(rendered):
    assert set(rendered) == {("Job", "faasgd-bench"), ("PersistentVolumeClaim", "faasgd-bench-results"),
                             ("ConfigMap", "faasgd-bench-matrix"), ("ConfigMap", "faasgd-dashboard")}
    assert {doc["metadata"]["namespace"] for doc in rendered.values()} == {"openfaas"}  # where basic-auth lives


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_every_rendered_resource_passes_strict_validation(rendered, version):
    for doc in rendered.values():
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_dashboard_is_the_repositorys_for_grafanas_sidecar(rendered):
    dashboard = rendered[("ConfigMap", "faasgd-dashboard")]
    assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert json.loads(dashboard["data"]["faasgd.json"]) == json.loads((ROOT / "k8s/dashboards/faasgd.json").read_text())


def test_the_mounted_matrix_is_one_test_sh_takes(rendered):
    text = rendered[("ConfigMap", "faasgd-bench-matrix")]["data"]["matrix.yml"]
    matrix = parse_matrix_text(text, "matrix")
    assert matrix.workload == "emnist" and len(matrix.configurations) * matrix.rounds >= 2


def test_the_steps_run_in_order_on_one_volume_with_the_gateways_login(rendered):
    spec = rendered[("Job", "faasgd-bench")]["spec"]
    pod = spec["template"]["spec"]
    assert spec["backoffLimit"] == 0 and pod["restartPolicy"] == "Never"
    steps = [*pod["initContainers"], *pod["containers"]]
    assert [s["name"] for s in steps] == ["prepare", "bench", "report"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["results"]["persistentVolumeClaim"]["claimName"] == "faasgd-bench-results"
    assert volumes["matrix"]["configMap"]["name"] == "faasgd-bench-matrix"
    assert volumes["basic-auth"]["secret"]["secretName"] == "basic-auth"
    for step in steps:
        assert step["image"] == "127.0.0.1:5000/faasgd-bench:latest"  # the images transformer's registry
        assert {m["name"] for m in step["volumeMounts"]} <= set(volumes)
        mounts = {m["mountPath"]: m["name"] for m in step["volumeMounts"]}
        assert mounts["/results"] == "results" and mounts["/bench"] == "matrix"
        assert step["securityContext"]["readOnlyRootFilesystem"] and mounts["/tmp"] == "tmp"
        assert "$(RUN)" not in " ".join(step["command"]) or "RUN" in {e["name"] for e in step["env"]}
    bench = " ".join(steps[1]["command"])
    assert "--target cluster --no-deploy --scale-with gateway" in bench and "--out /results/runs/$(RUN)" in bench
    assert pod.get("automountServiceAccountToken") is False  # it needs no Kubernetes API: scaling is the gateway's


def test_the_image_has_what_the_steps_name_and_runs_as_the_pods_user(rendered):
    dockerfile = (BENCH / "Dockerfile").read_text()
    pod = rendered[("Job", "faasgd-bench")]["spec"]["template"]["spec"]
    user = pod["securityContext"]["runAsUser"]
    assert re.search(rf"^USER {user}:{pod['securityContext']['runAsGroup']}$", dockerfile, re.M)
    assert re.search(rf"useradd --uid {user}\b", dockerfile)
    assert "python -m venv /app/.venv" in dockerfile and "COPY test.sh ./" in dockerfile
    assert re.search(r"^WORKDIR /app$", dockerfile, re.M)
    for step in [*pod["initContainers"], *pod["containers"]]:
        assert step["command"][0] in ("/app/.venv/bin/python", "/app/test.sh")
        assert step["workingDir"] == "/app"
