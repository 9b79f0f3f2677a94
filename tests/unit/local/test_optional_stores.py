"""The stores `faasgd up --stores cluster,pool,s3` starts and gives every function (faasgd.local.services.optional_stores):
the flag's names, the `stores` entries a pod gets (the in-cluster addresses k8s/sharded/ gives, planned as a stack
naming them is), a running runtime that lacks one refused with the exact command that gives it one, by `faasgd up`,
by `faasgd train` before anything is sent and by faasgd.api.train. The real groups and server run in
tests/e2e/test_documented_stores.py."""

import json
import os
from pathlib import Path

import psutil
import pytest

from faasgd import api
from faasgd.cli.main import main
from faasgd.errors import ConfigError
from faasgd.functions.settings import FunctionEnv
from faasgd.local.lifecycle import control, daemon
from faasgd.local.replicas.stack import FunctionSpec, load_stack
from faasgd.local.services import optional_stores, stack_groups
from faasgd.testing.stacks import GROUP_STORES
from faasgd.local.lifecycle.options import UpOptions
from support.paths import ROOT

STORES = "redis=redis://redis.openfaas-fn:6379/0,memcached=memcached://memcached.openfaas-fn:11211"
ME = {"pid": os.getpid(), "create_time": psutil.Process().create_time()}  # a live process playing the daemon


def spec(env):
    return FunctionSpec(name="emnist-train", lang="python3-http-faasgd", handler=Path("/x"), image="i",
                        environment=env)


def test_the_flag_takes_the_three_names_once_each_in_order():
    assert optional_stores.parse("s3, pool,cluster,pool") == ("cluster", "pool", "s3")
    assert optional_stores.parse("") == optional_stores.parse(None) == ()
    with pytest.raises(ConfigError) as error:
        optional_stores.parse("pool,redis-cluster")
    assert error.value.field == "--stores" and "cluster, pool, s3" in str(error.value)
    assert "redis-cluster" in str(error.value)


def test_the_entries_are_the_stack_ymls_opt_in_line():
    assert "," + optional_stores.entries(["cluster", "pool"]) == GROUP_STORES
    assert optional_stores.entries(["pool"], 2).count("memcached-pool-") == 2
    assert optional_stores.entries(["s3"]) == ""


def test_a_pod_gets_the_asked_stores_its_function_does_not_name():
    pod = optional_stores.pod_spec(spec({"stores": STORES}), ("cluster", "pool", "s3"))
    assert pod.environment["stores"] == STORES + GROUP_STORES
    assert set(FunctionEnv.read(pod.environment).stores) == {"redis", "memcached", "cluster", "pool"}
    named = spec({"stores": "pool=memcached://h:1"})
    assert optional_stores.pod_spec(named, ("pool",)) == named  # its own pool is kept
    assert optional_stores.pod_spec(spec({"a": "b"}), ("pool",)).environment == {"a": "b"}  # no `stores`: left alone
    assert optional_stores.pod_spec(spec({"stores": ""}), ("cluster",)).environment["stores"] == \
        GROUP_STORES.split(",pool=")[0].lstrip(",")


def test_asked_groups_are_planned_as_if_the_stack_named_them():
    specs = load_stack(ROOT / "stack.yml", env={})
    args = daemon.parse_args(["--stack", str(ROOT / "stack.yml"), "--dir", "/tmp/x", "--stores", "pool,cluster"])
    asked = {"stores": optional_stores.entries(args.stores, args.memcached_pool_servers)}
    plan = stack_groups.plan([*(s.environment for s in specs.values()), asked], stack_groups.GroupSizes())
    assert plan == stack_groups.GroupPlan(cluster_masters=3, cluster_replicas=0, pool_servers=3)
    assert stack_groups.plan([s.environment for s in specs.values()], stack_groups.GroupSizes()) == \
        stack_groups.GroupPlan()  # a plain `faasgd up` starts neither


@pytest.fixture
def running(tmp_path):
    """A folder whose state file names a running runtime (this process plays its daemon) with no optional store."""
    directory = tmp_path / ".faasgd"
    directory.mkdir()
    state = {**ME, "gateway_url": "http://127.0.0.1:9", "stores": {"redis": {}}, "store_groups": {},
             "optional_stores": []}
    (directory / "state.json").write_text(json.dumps(state))
    return directory


def test_what_a_running_runtime_offers():
    assert optional_stores.offered({"optional_stores": ["s3"], "store_groups": {"memcached-pool": {}},
                                    "stores": {}}) == {"s3", "pool"}
    assert optional_stores.offered({"stores": {"s3": {}}, "store_groups": {"redis-cluster": {}}}) == {"s3", "cluster"}
    assert optional_stores.offered(None) == set()


def test_the_remedy_is_the_exact_command_keeping_what_the_runtime_has():
    state = {"optional_stores": ["cluster"], "backend": "docker"}
    assert optional_stores.remedy(state, ["pool"]) == \
        "faasgd down && faasgd up --stores cluster,pool --backend docker"
    assert optional_stores.remedy({}, ["s3"], "rt") == "faasgd down --dir rt && faasgd up --stores s3 --dir rt"


def test_up_refuses_a_running_runtime_without_an_asked_store_naming_the_command(running, monkeypatch):
    monkeypatch.setattr(control, "serving", lambda state: True)
    with pytest.raises(ConfigError) as error:
        control.up(UpOptions(str(ROOT / "stack.yml"), 0, str(running), stores=("pool",), watchdog="off"))
    assert error.value.field == "--stores"
    assert f"`faasgd down --dir {running} && faasgd up --stores pool --dir {running}`" in str(error.value)


def test_train_refuses_a_store_the_running_runtime_lacks_before_sending_anything(running, capsys, monkeypatch):
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    monkeypatch.setattr(api, "start_runtime", lambda *a, **k: pytest.fail("nothing is started or sent"))
    code = main(["train", "--workers", "4", "--store", "pool", "--dir", str(running)])
    err = capsys.readouterr().err
    assert code == 2 and "faasgd: error: store: the local runtime running" in err
    assert f"`faasgd down --dir {running} && faasgd up --stores pool --dir {running}`" in err
    assert main(["train", "--channel", "s3", "--algorithm", "grad_avg", "--model", "lr", "--dataset", "higgs-like",
                 "--dir", str(running)]) == 2
    assert "channel: the local runtime running" in capsys.readouterr().err


def test_train_starts_a_runtime_with_the_store_its_job_names(tmp_path, monkeypatch):
    asked = {}

    def start_runtime(stack, port, directory, only="*", stores=()):
        asked.update(stores=stores, only=only)
        raise ConfigError("stop", "here")
    monkeypatch.setattr(api, "start_runtime", start_runtime)
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    assert main(["train", "--store", "cluster", "--dir", str(tmp_path / ".faasgd"), "-f",
                 str(ROOT / "stack.yml")]) == 2
    assert asked == {"stores": ("cluster",), "only": "emnist-*"}


def test_the_python_api_refuses_it_too(running, monkeypatch):
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    with pytest.raises(ConfigError) as error:
        api.train(store="cluster", directory=str(running))
    assert error.value.field == "store" and "faasgd up --stores cluster" in str(error.value)


def test_the_functions_own_refusal_names_the_command_for_the_local_runtime():
    with pytest.raises(ConfigError) as error:
        FunctionEnv.read({"stores": STORES}).store_url_of("pool")
    assert "`faasgd down && faasgd up --stores pool`" in str(error.value)
