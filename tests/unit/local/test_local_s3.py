"""faasgd.local.services.s3 without a server: which functions ask for S3, what their pods get, and that the runtime starts
one server, makes each bucket once, creates only the missing key secrets and publishes the Service address."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from faasgd.local.replicas import environment
from faasgd.local.replicas.deployments import Code, Deployment
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import dns, s3
from faasgd.local.services.secrets import SecretStore


def spec(env: dict[str, str], secrets: tuple[str, ...] = ("store-password",), name: str = "emnist-train"):
    return FunctionSpec(name=name, lang="python3-http-faasgd", handler=Path("/h"), image=f"img/{name}",
                        environment=env, secrets=secrets)


@pytest.mark.parametrize("env, asks", [
    ({"channel": "s3"}, True), ({"transfer": "s3"}, True), ({"channel": " S3 "}, True),
    ({"channel": "store"}, False), ({"transfer": "inline"}, False), ({}, False),
    ({"s3_url": "s3://mine/p", "channel": "store"}, False),  # an S3 space of its own, never asked of the runtime
])
def test_which_functions_ask_for_s3(env, asks):
    assert s3.asks_for_s3(env) is asks


@pytest.mark.parametrize("url, bucket", [
    ("s3://faasgd-jobs/lambdaml", "faasgd-jobs"), ("s3://faasgd-local", "faasgd-local"),
    ("http://faasgd-jobs/p", None), ("s3://Bad_Bucket/p", None), ("s3://a..b/p", None), ("s3://key:s@b3x/p", None),
])
def test_the_bucket_of_an_s3_url(url, bucket):
    assert s3.bucket_of(url) == bucket


def test_a_pod_without_s3_settings_gets_the_default_space_the_service_endpoint_and_the_key_secrets():
    pod = s3.pod_spec(spec({"channel": "s3", "store_url": "redis://redis.openfaas-fn:6379/0"}))
    assert pod.environment == {"channel": "s3", "store_url": "redis://redis.openfaas-fn:6379/0",
                               "s3_url": s3.DEFAULT_URL, "s3_endpoint_url": "http://minio.openfaas-fn:9000"}
    assert pod.secrets == ("store-password", "s3-access-key", "s3-secret-key")


def test_what_a_function_sets_itself_is_kept():
    own = spec({"channel": "s3", "s3_url": "s3://mine/x", "s3_endpoint_url": "http://minio.openfaas-fn:9000"},
               secrets=("s3-secret-key",))
    pod = s3.pod_spec(own)
    assert pod.environment == own.environment
    assert pod.secrets == ("s3-secret-key", "s3-access-key")
    via_secret = s3.pod_spec(spec({"transfer": "s3"}, secrets=("s3-endpoint",)))
    assert "s3_endpoint_url" not in via_secret.environment  # its s3-endpoint secret names the endpoint


def test_the_service_address_becomes_the_servers_loopback_address_in_every_dns_form():
    table = dns.addresses({"s3": "127.0.0.1:7009"}, [s3.SERVICE])
    for host in ("minio", "minio.openfaas-fn", "minio.openfaas-fn.svc.cluster.local"):
        assert dns.rewrite({"e": f"http://{host}:9000"}, table) == {"e": "http://127.0.0.1:7009"}


def test_only_the_missing_key_secrets_are_created_and_kept_private(tmp_path):
    store = SecretStore(tmp_path / "secrets")
    store.create("s3-access-key", b"the user's own")
    assert s3.make_key_secrets(store) == ["s3-secret-key"]
    assert (tmp_path / "secrets" / "s3-access-key").read_bytes() == b"the user's own"
    assert len((tmp_path / "secrets" / "s3-secret-key").read_bytes()) >= 24
    assert (tmp_path / "secrets" / "s3-secret-key").stat().st_mode & 0o077 == 0
    assert s3.make_key_secrets(store) == []


@dataclass
class FakeServer:
    port: int
    up: bool = True
    url: str = ""

    def __post_init__(self):
        self.url = f"http://127.0.0.1:{self.port}"
        self.ref = type("Ref", (), {"to_json": lambda _: {"pid": self.port, "create_time": 1.0}})()

    def alive(self):
        return self.up

    def stop(self):
        self.up = False


@pytest.fixture
def local(tmp_path, monkeypatch):
    """A LocalS3 whose server and bucket calls are recorded, attached to a Service table and a state entry."""
    started, buckets, recorded = [], [], []

    def start(host="127.0.0.1"):
        started.append(FakeServer(7100 + len(started)))
        return started[-1]
    monkeypatch.setattr(s3, "start_s3_server", start)
    monkeypatch.setattr(s3, "make_bucket", lambda endpoint, bucket: buckets.append((endpoint, bucket)))
    runtime = s3.LocalS3(SecretStore(tmp_path / "secrets"))
    table = dns.addresses({"gateway": "127.0.0.1:7000", "redis": "127.0.0.1:7001", "memcached": "127.0.0.1:7002"})

    def record(addresses, entry):
        table.update(addresses)
        recorded.append(entry)
    runtime.attach(record)
    return runtime, table, started, buckets, recorded


def test_a_function_not_asking_starts_nothing(local):
    runtime, table, started, buckets, recorded = local
    plain = spec({"channel": "store"})
    assert runtime.provide(plain) is plain
    assert (started, buckets, recorded) == ([], [], [])
    assert not runtime.store.names()


def test_the_first_asking_pod_starts_the_server_later_ones_reuse_it(local):
    runtime, table, started, buckets, recorded = local
    for name in ("emnist-setup", "emnist-train", "emnist-train"):
        runtime.provide(spec({"channel": "s3"}, name=name))
    runtime.provide(spec({"transfer": "s3", "s3_url": "s3://stacking-objects/p"}, name="stacking-driver"))
    assert len(started) == 1
    assert buckets == [("http://127.0.0.1:7100", "faasgd-local"), ("http://127.0.0.1:7100", "stacking-objects")]
    assert recorded == [{"url": "http://127.0.0.1:7100", "pid": 7100, "create_time": 1.0}]
    assert table["minio.openfaas-fn:9000"] == "127.0.0.1:7100"
    assert runtime.store.names() == ["s3-access-key", "s3-secret-key"]


def test_a_server_that_died_is_started_again_and_its_buckets_made_again(local):
    runtime, table, started, buckets, recorded = local
    runtime.provide(spec({"channel": "s3"}))
    started[0].up = False
    runtime.provide(spec({"channel": "s3"}))
    assert len(started) == 2 and len(buckets) == 2 and len(recorded) == 2
    assert table["minio:9000"] == "127.0.0.1:7101"


def test_a_pod_started_through_the_spawner_reaches_the_server_through_its_environment(local, tmp_path):
    runtime, table, *_ = local
    asked = spec({"channel": "s3", "store_url": "redis://redis.openfaas-fn:6379/0"})
    deployment = Deployment(asked, Code(asked, tmp_path, {}), 0.0)
    seen = []
    runtime.spawner(lambda d, name, host: seen.append((d, name, host)))(deployment, "emnist-train-1", "host")
    pod, name, host = seen[0]
    env = environment.function_env(pod.spec, table)
    assert env["s3_endpoint_url"] == "http://127.0.0.1:7100" and env["store_url"] == "redis://127.0.0.1:7001/0"
    assert "s3-secret-key" in pod.spec.secrets and (name, host) == ("emnist-train-1", "host")
    assert deployment.spec is asked  # the function as deployed is left as it was


def test_under_docker_the_server_listens_and_is_published_on_the_networks_gateway_address(tmp_path, monkeypatch):
    hosts = []

    def start(host="127.0.0.1"):
        hosts.append(host)
        return FakeServer(7200)
    monkeypatch.setattr(s3, "start_s3_server", start)
    monkeypatch.setattr(s3, "make_bucket", lambda endpoint, bucket: None)
    runtime, table = s3.LocalS3(SecretStore(tmp_path / "secrets"), address="172.30.0.1"), {}
    runtime.attach(lambda addresses, entry: table.update(addresses))
    runtime.provide(spec({"channel": "s3"}))
    assert hosts == ["172.30.0.1"] and table["minio.openfaas-fn:9000"] == "172.30.0.1:7200"
