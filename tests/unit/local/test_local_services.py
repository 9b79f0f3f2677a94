"""Cluster DNS, emulated: in-cluster Service addresses in a replica's environment become loopback ones."""

import re

import pytest
import yaml

from faasgd.local.replicas.stack import load_stack
from faasgd.local.services import dns
from faasgd.testing import stacks
from support.paths import ROOT

LOCAL = {"gateway": "127.0.0.1:7000", "redis": "127.0.0.1:7001", "memcached": "127.0.0.1:7002"}
GROUPS = {"redis-cluster": "127.0.0.1:7100", **{f"memcached-pool/{i}": f"127.0.0.1:{7200 + i}" for i in range(3)}}
TABLE = dns.addresses({**LOCAL, **GROUPS}, [*dns.SERVICES, *dns.group_services(True, 3)])
CLUSTER_HOST = re.compile(r"[a-z0-9-]+\.openfaas(?:-fn)?(?:\.svc)?(?:\.cluster\.local)?:[0-9]+")


def rewrite_one(value):
    return dns.rewrite({"x": value}, TABLE)["x"]


def kubernetes_services():
    for path in sorted([*(ROOT / "k8s").glob("*.yaml"), *(ROOT / "k8s" / "sharded").glob("*.yaml")]):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Service":
                for port in doc["spec"]["ports"]:
                    yield doc["metadata"]["name"], doc["metadata"]["namespace"], port["port"]


@pytest.mark.parametrize("stack", ["stack.yml", "bench/stack.yml"])
def test_every_cluster_address_in_a_stack_is_rewritten(stack):
    for spec in load_stack(ROOT / stack, env={}).values():
        rewritten = dns.rewrite(spec.environment, TABLE)
        assert rewritten.keys() == spec.environment.keys()
        leftover = {k: v for k, v in rewritten.items() if CLUSTER_HOST.search(v)}
        assert not leftover, f"{stack}: {spec.name} names cluster addresses no local process plays: {leftover}"


def test_the_repository_stack_points_at_the_local_gateway_and_stores():
    env = dns.rewrite(load_stack(ROOT / "stack.yml", env={})["emnist-train"].environment, TABLE)
    assert env["store_url"] == "redis://127.0.0.1:7001/0"
    assert env["local_store_url"] == "memcached://127.0.0.1:7002"
    assert env["gateway_url"] == "http://127.0.0.1:7000"
    assert env["batch_size"] == "128" and env["exec_timeout"] == "3600s"  # the rest is untouched


def test_the_table_plays_every_service_of_k8s():
    played = [*dns.SERVICES, *dns.group_services(True, 3)]
    table = {(s.name, s.namespace, s.port) for s in played}
    found = set(kubernetes_services()) - {(dns.POOL, dns.FUNCTION_NAMESPACE, dns.POOL_PORT)}
    assert found and found <= table  # the pool's headless Service is only its pods' DNS domain: they are played


def test_the_stack_with_its_opt_in_line_names_the_cluster_and_each_pool_member(tmp_path):
    stack = stacks.stack_copy(ROOT, tmp_path, edit=stacks.with_store_groups)
    env = dns.rewrite(load_stack(stack, env={})["emnist-setup"].environment, TABLE)
    stores = dict(part.split("=", 1) for part in env["stores"].split(",") if "=" in part)
    assert stores["cluster"] == "redis-cluster://127.0.0.1:7100"
    assert env["stores"].endswith("pool=memcached://127.0.0.1:7200,127.0.0.1:7201,127.0.0.1:7202")


@pytest.mark.parametrize("values, named", [
    (["pool=memcached://memcached-pool-0.memcached-pool.openfaas-fn:11211,"
      "memcached-pool-2.memcached-pool.openfaas-fn.svc.cluster.local:11211"], (False, 3)),
    (["redis-cluster://redis-cluster:6379", "memcached://memcached-pool-0.memcached-pool:11211"], (True, 1)),
    (["redis-cluster://REDIS-CLUSTER.openfaas-fn.svc:6379"], (True, 0)),
    (["redis-cluster.openfaas-fn", "redis-cluster.openfaas-fn:63790", "my-redis-cluster.openfaas-fn:6379",
      "memcached-pool-1.memcached-pool:1121", "xmemcached-pool-1.memcached-pool:11211",
      "memcached://memcached-pool.openfaas-fn:11211", "redis://redis.openfaas-fn:6379/0"], (False, 0)),
])
def test_a_stack_names_a_group_by_its_address_with_the_port(values, named):
    assert dns.named_groups(values) == named


def test_each_pool_member_is_played_by_its_own_server():
    value = "memcached://memcached-pool-0.memcached-pool:11211,memcached-pool-1.memcached-pool.openfaas-fn.svc:11211"
    assert rewrite_one(value) == "memcached://127.0.0.1:7200,127.0.0.1:7201"
    assert rewrite_one("memcached://memcached-pool-3.memcached-pool:11211") == \
        "memcached://memcached-pool-3.memcached-pool:11211"  # no fourth member here


@pytest.mark.parametrize("value, expected", [
    ("redis://redis.openfaas-fn.svc.cluster.local:6379/0", "redis://127.0.0.1:7001/0"),
    ("redis://redis.openfaas-fn.svc:6379/0", "redis://127.0.0.1:7001/0"),
    ("redis://redis:6379/0", "redis://127.0.0.1:7001/0"),  # a bare name resolves in the functions' namespace
    ("redis://:p%40ss@Redis.OpenFaaS-fn:6379/2", "redis://:p%40ss@127.0.0.1:7001/2"),  # DNS ignores case
    ("memcached-local.openfaas-fn:11211,memcached.openfaas-fn:11211", "127.0.0.1:7002,127.0.0.1:7002"),
    ("http://gateway.openfaas:8080/function/x?y=gateway.openfaas:8080",
     "http://127.0.0.1:7000/function/x?y=127.0.0.1:7000"),
])
def test_every_dns_form_of_a_service_is_rewritten(value, expected):
    assert rewrite_one(value) == expected


@pytest.mark.parametrize("value", [
    "redis://myredis.openfaas-fn:6379/0",  # another name that ends like one of ours
    "redis://cache.redis.openfaas-fn:6379/0",
    "redis://redis.openfaas-fn:63790/0",  # another port that starts like ours
    "redis://redis.openfaas-fn:6380/0",
    "redis://redis.openfaas-fn/0",  # no port: left to the client's default
    "http://gateway:8080",  # the gateway lives in openfaas, not in the functions' namespace
    "redis://redis.elsewhere:6379/0",
    "loop",
])
def test_other_addresses_are_left_alone(value):
    assert rewrite_one(value) == value


def test_keys_are_never_rewritten():
    assert dns.rewrite({"redis:6379": "x"}, TABLE) == {"redis:6379": "x"}


def test_a_service_nothing_plays_locally_is_an_error():
    with pytest.raises(KeyError, match="memcached"):
        dns.addresses({"gateway": "127.0.0.1:1", "redis": "127.0.0.1:2"})
