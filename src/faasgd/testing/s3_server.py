"""A real S3-compatible server for the tests and the benches: moto's server mode in its own process on 127.0.0.1.

    server = start_s3()                       moto's server (moto_atomic.py: PUT atomic) on a free port; returns once it answers
    creds = enable_auth(server)               an IAM user's keys; from then on only signed requests with them pass
    make_bucket(server, creds, "b")           a bucket, with boto3 directly (the code under test never creates any)
    server.stop()                             terminates and reaps it (idempotent)
    tables = DynamoEndpoint.made(server)      the same server as DynamoDB: the channel's two tables, its settings

The process is started and waited for as faasgd.local.services.stores starts redis-server and memcached (spawn_server,
start_server: a fresh port on a clash, a deadline on readiness). moto keeps everything in memory: a restarted
server has no buckets. Without enable_auth, moto accepts any keys.
"""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from faasgd.channels import DynamoSettings, S3Settings
from faasgd.local import LOOPBACK, ServerProcess, spawn_server, start_server
from faasgd.testing.stacks import stack_copy

ATOMIC_MOTO = "faasgd.testing.moto_atomic"  # moto's server, PUT atomic as in S3 (run with python -m)
DUMMY = S3Settings(None, "us-east-1", "testing-access-key", "testing-secret-key")  # moto without auth takes any


def start_s3(port: int | None = None, ready_timeout: float = 20.0) -> ServerProcess:
    """moto's server on 127.0.0.1 (a free port unless `port`); `url` is its endpoint, http://127.0.0.1:P."""

    def launch(p: int) -> ServerProcess:
        tmp = tempfile.TemporaryDirectory(prefix="faasgd-moto-")
        argv = [sys.executable, "-m", ATOMIC_MOTO, "-H", LOOPBACK, "-p", str(p)]  # moto with atomic PUTs
        return spawn_server("moto", f"http://{LOOPBACK}:{p}", p, argv, tmp, None)

    return start_server(launch, port, _answers, ready_timeout)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/moto-api/", timeout=1.0) as answer:
            return answer.status == 200
    except (OSError, urllib.error.URLError):
        return False


@dataclass(frozen=True)
class S3Endpoint:
    """What a test needs to reach the server: its process, its endpoint, working keys and a bucket."""

    server: ServerProcess
    settings: S3Settings  # endpoint + the keys the server accepts
    bucket: str  # created, empty at the start of the session

    def write_secrets(self, directory, settings: S3Settings | None = None) -> str:
        """The function's secret files for `settings` (default: the working ones) in `directory`."""
        settings = settings or self.settings
        for name, value in (("s3-access-key", settings.access_key), ("s3-secret-key", settings.secret_key),
                            ("s3-endpoint", settings.endpoint_url or ""), ("s3-region", settings.region)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
                f.write(value + "\n")
        return str(directory)


def settings_for(server: ServerProcess, base: S3Settings = DUMMY) -> S3Settings:
    return S3Settings(server.url, base.region, base.access_key, base.secret_key)


def boto_client(settings: S3Settings):
    import boto3

    return boto3.session.Session().client("s3", endpoint_url=settings.endpoint_url, region_name=settings.region,
                                          aws_access_key_id=settings.access_key,
                                          aws_secret_access_key=settings.secret_key)


def make_bucket(settings: S3Settings, bucket: str) -> None:
    boto_client(settings).create_bucket(Bucket=bucket)


def enable_auth(server: ServerProcess) -> S3Settings:
    """Create an IAM user allowed everything on S3, then make moto check every request's signature."""
    import boto3

    iam = boto3.session.Session().client("iam", endpoint_url=server.url, region_name=DUMMY.region,
                                         aws_access_key_id=DUMMY.access_key,
                                         aws_secret_access_key=DUMMY.secret_key)
    iam.create_user(UserName="faasgd")
    iam.put_user_policy(UserName="faasgd", PolicyName="s3", PolicyDocument=(
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'))
    key = iam.create_access_key(UserName="faasgd")["AccessKey"]
    request = urllib.request.Request(f"{server.url}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})  # a form body would be parsed away
    with urllib.request.urlopen(request, timeout=5.0) as answer:
        assert answer.status == 200
    return S3Settings(server.url, DUMMY.region, key["AccessKeyId"], key["SecretAccessKey"])


S3_SECRETS = ("s3-access-key", "s3-secret-key", "s3-endpoint", "s3-region")  # what a function's S3 space reads


def s3_stack(root: Path, directory: Path, s3_url: str, drain_s: int = 1,
             prefixes: tuple[str, ...] = ("stacking-",)) -> str:
    """`root`'s stack.yml, written into `directory`, with the functions named `prefixes*` (default: the stacking
    functions) configured for S3 (env s3_url, the four secrets) and replicas draining for `drain_s`: how a user
    enables transfer s3 (or channel s3, with prefixes=("emnist-",))."""
    def use_s3(stack: dict) -> None:
        for name, spec in stack["functions"].items():
            if name.startswith(prefixes):
                spec["environment"]["s3_url"] = s3_url
                spec["secrets"] = [*spec.get("secrets", []), *S3_SECRETS]

    return stack_copy(root, directory, drain_s, use_s3)


def preload_secrets(runtime_dir, endpoint: "S3Endpoint") -> None:
    """The S3 secrets in a runtime folder before `faasgd up`, as `faas-cli secret create` would leave them."""
    secrets = runtime_dir / "secrets"
    secrets.mkdir(mode=0o700, parents=True, exist_ok=True)
    endpoint.write_secrets(secrets)
    for name in S3_SECRETS:
        (secrets / name).chmod(0o600)


DYNAMODB_SECRETS = {"access_key": "dynamodb-access-key", "secret_key": "dynamodb-secret-key",
                    "endpoint_url": "dynamodb-endpoint", "region": "dynamodb-region"}  # what a DynamoSpace reads


@dataclass(frozen=True)
class DynamoEndpoint:
    """moto's server answering DynamoDB's API (it serves every AWS API it models), with the channel's two tables."""

    server: ServerProcess
    settings: DynamoSettings  # endpoint, region, the two tables, keys (moto without auth takes any)

    @classmethod
    def made(cls, server: ServerProcess, temp_table: str = "faasgd-temp",
             merged_table: str = "faasgd-merged") -> "DynamoEndpoint":
        """The two tables created on `server` (key `k`, a string, as faasgd.channels.dynamodb uses)."""
        import boto3

        settings = DynamoSettings(server.url, DUMMY.region, temp_table, merged_table, DUMMY.access_key,
                                  DUMMY.secret_key)
        client = boto3.session.Session().client("dynamodb", endpoint_url=server.url, region_name=DUMMY.region,
                                                aws_access_key_id=DUMMY.access_key,
                                                aws_secret_access_key=DUMMY.secret_key)
        for table in (temp_table, merged_table):
            client.create_table(TableName=table, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                                AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                                BillingMode="PAY_PER_REQUEST")
        return cls(server, settings)

    def client(self):
        import boto3

        s = self.settings
        return boto3.session.Session().client("dynamodb", endpoint_url=s.endpoint_url, region_name=s.region,
                                              aws_access_key_id=s.access_key, aws_secret_access_key=s.secret_key)

    def write_secrets(self, directory) -> str:
        """The function's dynamodb-* secret files in `directory` (the tables go in its environment)."""
        for setting, name in DYNAMODB_SECRETS.items():
            with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
                f.write(str(getattr(self.settings, setting) or "") + "\n")
        return str(directory)
