"""The stacking functions' image, built for real without docker: a fresh venv with only what it holds serves a job.

The venv (no system site-packages) gets what the Dockerfile gives the four stacking images
(support.function_image): the template's requirements.txt, each stacking-*/requirements.txt and the core with
the extra `stacking`. Each function then runs as its container does, `python index.py` in its build folder
under that venv's Python with the pod's environment, behind the local gateway, on a real redis-server and
memcached (support.image_replicas). Then:
  * a default job, its objects inline and in the store, ends done with the scores scikit-learn alone gives;
  * no replica process loaded a Downpour or LambdaML module, while serving a job (each process logs every
    module it loads, lazily loaded ones included), nor does importing a handler in that venv's interpreter
    (its sys.modules).
"""

from __future__ import annotations

import pytest

from faasgd.openfaas import GatewayClient
from faasgd.stacking.config import load_stacking
from support.function_image import STACKING, build_image
from support.image_replicas import serve
from support.loaded_modules import loaded_modules, of_package
from support.stacking_drive import sklearn_scores

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

OTHER_WORKLOADS = ("faasgd.downpour", "faasgd.lambdaml")
MODELS = ["LinearSVR", "Lasso", "RandomForestRegressor", "KNeighborsRegressor"]  # stack.yml's, for 4 trainers


@pytest.fixture(scope="session")
def image(tmp_path_factory):
    """(venv python, build folder): the stacking images' Python, made once a session."""
    return build_image(tmp_path_factory.mktemp("stacking-image"), STACKING, extras="stacking")


@pytest.fixture(scope="module")
def functions(image, redis_server, memcached_server, tmp_path_factory):
    """(gateway client, replicas by name): one replica of each stacking function under the venv's Python."""
    python, build = image
    stores = {"redis": redis_server.url, "memcached": memcached_server.url}
    with serve(python, build, STACKING, stores, tmp_path_factory.mktemp("stacking-replicas")) as (url, replicas):
        yield GatewayClient(url, 120), replicas


def workloads_in(modules) -> list[str]:
    return [m for package in OTHER_WORKLOADS for m in of_package(modules, package)]


@pytest.mark.parametrize("transfer, store, concurrent", [("inline", "redis", True), ("store", "memcached", False)])
def test_a_default_job_runs_through_the_four_functions_under_the_venv(functions, transfer, store, concurrent):
    gateway, _ = functions
    answer = gateway.invoke("stacking-driver", {"transfer": transfer, "store": store,
                                                "concurrent_training": concurrent})
    assert answer.status == 200, answer.body[:500]
    result = answer.json()
    base, ensemble = sklearn_scores(load_stacking({}, {}))(4)
    assert result["base_scores"] == pytest.approx(base) and result["ensemble_score"] == pytest.approx(ensemble)
    assert result["models"] == MODELS and result["call_retries"] == 0
    status = gateway.invoke("stacking-driver", method="GET", query={"job_id": result["job_id"], "store": store})
    assert status.status == 200 and status.json()["state"] == "done"
    assert status.json()["ensemble_score"] == result["ensemble_score"]


def test_no_replica_loads_downpour_or_lambdaml_while_serving_a_job(functions):
    gateway, replicas = functions
    answer = gateway.invoke("stacking-driver", {"trainers_num": 2, "models": ["Lasso", "RandomForestRegressor"]})
    assert answer.status == 200, answer.body[:500]
    assert "sklearn.ensemble" in replicas["stacking-trainer"].imported()  # loaded in the call: the log sees it
    for name, replica in replicas.items():
        loaded = replica.imported()
        assert "faasgd.functions.stacking" in loaded, name  # the handler's logic
        assert workloads_in(loaded) == [], name


@pytest.mark.parametrize("function", STACKING)
def test_importing_a_handler_in_the_venv_loads_no_other_workload(image, function):
    python, build = image
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # nothing of this shell's (no PYTHONPATH to the sources)
    modules = loaded_modules(python, str(build / function / "function" / "handler.py"), env)
    assert "faasgd.functions.stacking" in modules
    assert workloads_in(modules) == []
