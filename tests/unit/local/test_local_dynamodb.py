"""faasgd.local.services.dynamodb without a server: which functions ask for DynamoDB, what their pods get, and that the
runtime's one moto server gives both S3 and the DynamoDB tables, each table made once, the key secrets created."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from faasgd.channels import dynamodb_settings
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import dns, dynamodb, optional_stores, s3
from faasgd.local.services.secrets import SecretStore


def spec(env: dict[str, str], secrets: tuple[str, ...] = ("store-password",), name: str = "emnist-train"):
    return FunctionSpec(name=name, lang="python3-http-faasgd", handler=Path("/h"), image=f"img/{name}",
                        environment=env, secrets=secrets)


@pytest.mark.parametrize("env, asks", [({"channel": "dynamodb"}, True), ({"channel": " DynamoDB "}, True),
                                       ({"channel": "s3"}, False), ({"transfer": "dynamodb"}, False), ({}, False)])
def test_which_functions_ask_for_dynamodb(env, asks):
    assert dynamodb.asks_for_dynamodb(env) is asks


def test_the_runtimes_defaults_are_the_channels():
    assert dynamodb.TABLE_ENVS == {dynamodb_settings.ENV_KEYS[k]: v for k, v in dynamodb_settings.DEFAULT_TABLES.items()}
    assert dynamodb.KEY_SECRETS == (dynamodb_settings.SECRET_FILES["access_key"],
                                    dynamodb_settings.SECRET_FILES["secret_key"])
    assert (dynamodb.ENDPOINT_ENV, dynamodb.ENDPOINT_SECRET, dynamodb.REGION_ENV) == (
        dynamodb_settings.ENV_KEYS["endpoint_url"], dynamodb_settings.SECRET_FILES["endpoint_url"],
        dynamodb_settings.ENV_KEYS["region"])


def test_a_pod_gets_the_service_endpoint_and_the_key_secrets_unless_it_has_its_own():
    pod = dynamodb.pod_spec(spec({"channel": "dynamodb"}))
    assert pod.environment == {"channel": "dynamodb", "dynamodb_endpoint_url": "http://dynamodb.openfaas-fn:8000"}
    assert pod.secrets == ("store-password", "dynamodb-access-key", "dynamodb-secret-key")
    own = dynamodb.pod_spec(spec({"channel": "dynamodb"}, secrets=("dynamodb-endpoint", "dynamodb-secret-key")))
    assert "dynamodb_endpoint_url" not in own.environment
    assert own.secrets == ("dynamodb-endpoint", "dynamodb-secret-key", "dynamodb-access-key")


def test_tables_of_a_pod_default_and_leave_a_bad_name_to_the_function():
    assert dynamodb.tables_of({}) == ("us-east-1", ("faasgd-temp", "faasgd-merged"))
    assert dynamodb.tables_of({"dynamodb_region": "eu-west-1", "dynamodb_temp_table": "t/x",
                               "dynamodb_merged_table": "mine"}) == ("eu-west-1", ("mine",))


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
def recorded(tmp_path, monkeypatch):
    started, made = [], []

    def start(host="127.0.0.1"):
        started.append(FakeServer(7300 + len(started)))
        return started[-1]
    monkeypatch.setattr(s3, "start_s3_server", start)
    monkeypatch.setattr(s3, "make_bucket", lambda endpoint, bucket: made.append(("bucket", bucket)))
    monkeypatch.setattr(dynamodb, "make_table", lambda endpoint, region, table: made.append((region, table)))
    return started, made


def test_one_server_gives_s3_and_the_tables_each_made_once(tmp_path, recorded):
    started, made = recorded
    runtime, table = s3.LocalS3(SecretStore(tmp_path / "secrets")), {}
    runtime.attach(lambda addresses, entry: table.update(addresses))
    for name in ("emnist-setup", "emnist-train", "emnist-train"):
        runtime.provide(spec({"channel": "dynamodb"}, name=name))
    runtime.provide(spec({"transfer": "s3"}, name="stacking-driver"))
    assert len(started) == 1
    assert made == [("us-east-1", "faasgd-temp"), ("us-east-1", "faasgd-merged"), ("bucket", "faasgd-local")]
    assert table["dynamodb.openfaas-fn:8000"] == table["minio.openfaas-fn:9000"] == "127.0.0.1:7300"
    assert runtime.store.names() == ["dynamodb-access-key", "dynamodb-secret-key", "s3-access-key", "s3-secret-key"]


def test_stores_dynamodb_gives_every_function_its_tables_and_not_s3(tmp_path, recorded):
    started, made = recorded
    runtime = s3.LocalS3(SecretStore(tmp_path / "secrets"), dynamodb_every_function=True)
    pod = runtime.provide(spec({"channel": "store"}))
    assert pod.environment["dynamodb_endpoint_url"] == dynamodb.SERVICE_URL and "s3_url" not in pod.environment
    assert made == [("us-east-1", "faasgd-temp"), ("us-east-1", "faasgd-merged")]


def test_a_job_on_the_dynamodb_channel_needs_the_optional_store():
    assert optional_stores.parse("dynamodb,s3") == ("s3", "dynamodb")
    assert optional_stores.needed("redis", "dynamodb") == ("dynamodb",)
    assert optional_stores.needed("pool", "dynamodb") == ("pool", "dynamodb")
    assert optional_stores.offered({"optional_stores": ["dynamodb"]}) == {"dynamodb"}
    table = dns.addresses({"s3": "127.0.0.1:7009"}, [dynamodb.SERVICE])
    assert dns.rewrite({"e": "http://dynamodb:8000"}, table) == {"e": "http://127.0.0.1:7009"}
