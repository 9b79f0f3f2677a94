"""Stacking ensemble training end to end on the local runtime (`faasgd up`): the driver calls four trainers,
the reducer and the metatrainer through the gateway, with objects inline and in the store (Redis and
Memcached), trainers at once and one after another; the scores are what scikit-learn alone gives."""

import json
import os
import subprocess
import sys

import pytest
from support.paths import ROOT
from support.stacking_drive import sklearn_scores

from faasgd.local.lifecycle import credentials
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient
from faasgd.stacking import flow
from faasgd.stacking.config import load_stacking
from faasgd.testing.s3_server import boto_client, preload_secrets, s3_stack

pytestmark = pytest.mark.e2e


def faasgd(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=dict(os.environ))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, s3_endpoint):
    root = tmp_path_factory.mktemp("stacking")
    directory = root / ".faasgd"
    preload_secrets(directory, s3_endpoint)
    prefix = f"e2e-{root.name}"
    stack = s3_stack(ROOT, root / "stack", f"s3://{s3_endpoint.bucket}/{prefix}")
    started = faasgd("up", "--port", str(free_port()), "--dir", str(directory), "-f", stack)
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((directory / "state.json").read_text())
    client = GatewayClient(state["gateway_url"], 120, auth=credentials.read(directory / "secrets"))
    client.directory = directory  # for `faasgd ... --dir`
    client.s3 = (boto_client(s3_endpoint.settings), s3_endpoint.bucket, prefix)  # to look into the bucket
    yield client
    assert faasgd("down", "--dir", str(directory)).returncode == 0


@pytest.fixture(scope="module")
def oracle():
    """The default job's scores from scikit-learn alone, by trainers_num."""
    return sklearn_scores(load_stacking({}, {}))


@pytest.mark.parametrize("transfer, store, concurrent, trainers", [
    ("inline", "redis", True, 4), ("inline", "redis", False, 4), ("store", "redis", True, 4),
    ("store", "memcached", False, 4), ("s3", "redis", True, 4), ("s3", "memcached", False, 4),
    ("inline", "redis", False, 16), ("store", "memcached", True, 16), ("s3", "redis", False, 16)])  # 16: each transfer
def test_a_default_job_runs_through_the_four_functions(gateway, oracle, transfer, store, concurrent, trainers):
    answer = gateway.invoke("stacking-driver", {"transfer": transfer, "store": store, "concurrent_training": concurrent,
                                                "trainers_num": trainers})
    assert answer.status == 200, answer.body[:500]
    result = answer.json()
    base, ensemble = oracle(trainers)
    assert result["base_scores"] == pytest.approx(base) and result["ensemble_score"] == pytest.approx(ensemble)
    assert result["models"] == ["LinearSVR", "Lasso", "RandomForestRegressor", "KNeighborsRegressor"] * (trainers // 4)
    assert set(result["phases"]) == set(flow.PHASES) and all(v > 0 for v in result["phases"].values())
    assert result["call_retries"] == 0
    s3, bucket, prefix = gateway.s3
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{result['job_id']}/").get("Contents", [])
    # model:i and pred:i per trainer; dataset, models, meta-features, full-model
    assert (len(listed) == 2 * trainers + 4) if transfer == "s3" else not listed
    status = gateway.invoke("stacking-driver", method="GET", query={"job_id": result["job_id"], "store": store})
    assert status.status == 200 and status.json()["state"] == "done"
    assert status.json()["ensemble_score"] == result["ensemble_score"]


def test_bad_requests_are_refused_before_any_work(gateway):
    s3 = gateway.invoke("stacking-driver", {"transfer": "s3", "s3_url": "s3://elsewhere/x"})
    assert s3.status == 400 and s3.json()["field"] == "s3_url"
    big = gateway.invoke("stacking-driver", {"transfer": "inline", "trainers_num": 64})
    assert big.status == 413 and big.json()["field"] == "transfer"
    located = gateway.invoke("stacking-driver", {"store_url": "redis://elsewhere:6379/0"})
    assert located.status == 400 and located.json()["field"] == "store_url"
    unknown = gateway.invoke("stacking-reducer", {"job_id": "snothere", "trainers": []})
    assert unknown.status == 404 and unknown.json()["field"] == "job_id"


def test_faasgd_status_shows_a_stacking_job_as_the_driver_keeps_it(gateway):
    answer = gateway.invoke("stacking-driver", {"trainers_num": 2, "models": ["Lasso", "RandomForestRegressor"]})
    assert answer.status == 200, answer.body[:500]
    result = answer.json()
    shown = faasgd("status", result["job_id"], "--dir", str(gateway.directory))
    assert shown.returncode == 0, shown.stderr
    assert f"stacking job {result['job_id']}: done" in shown.stdout
    assert f"ensemble         {result['ensemble_score']:.4f}" in shown.stdout
    assert "RandomForestRegressor" in shown.stdout and "meta_train" in shown.stdout
    as_json = faasgd("status", result["job_id"], "--json", "--watch", "--dir", str(gateway.directory))
    kept = gateway.invoke("stacking-driver", method="GET", query={"job_id": result["job_id"]}).json()
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == kept
    missing = faasgd("status", "s" + "0" * 15, "--dir", str(gateway.directory))
    assert missing.returncode != 0 and "job_id" in missing.stderr
