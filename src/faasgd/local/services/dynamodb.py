"""The DynamoDB a function configured for LambdaML's DynamoDB channel finds on a cluster, played on this machine.

On a cluster a function with `channel: dynamodb` reaches its two tables (`dynamodb_temp_table`,
`dynamodb_merged_table`) through an endpoint (`dynamodb_endpoint_url`, e.g. an in-cluster DynamoDB Local's Service;
none for AWS) with the secrets `dynamodb-access-key` and `dynamodb-secret-key` (faasgd.channels.dynamodb_settings).
Locally the runtime provides them when a replica of such a function starts (or of every function, after
`faasgd up --stores dynamodb`), beside S3 and from the same process (faasgd.local.services.s3.LocalS3):

1. the server: moto's server, the one the runtime runs for S3: it answers DynamoDB's API on the same port
   (its DynamoDB model comes with moto itself). It plays the Service SERVICE_ADDRESS (DynamoDB Local's port 8000).
2. its tables: the function's two (default faasgd-temp and faasgd-merged), created once in its region with the
   one string partition key `k` the channel uses (CreateTable, unsigned: the local server checks no signature).
3. its secrets: `dynamodb-access-key` and `dynamodb-secret-key` created in the runtime's secrets when missing.
4. its endpoint: `dynamodb_endpoint_url` = SERVICE_URL when the function brings none of its own (neither that
   variable nor a listed `dynamodb-endpoint` secret).

The runtime imports nothing of the channel's (the wings' import rules): the default table names and the region
are repeated here, and a unit test holds them equal to faasgd.channels.dynamodb_settings'.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import replace
from typing import Mapping

from faasgd.errors import StoreUnavailable
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import dns

ASKING_KEY, ASKING_VALUE = "channel", "dynamodb"  # the environment key and value that ask for DynamoDB
SERVICE = dns.Service("dynamodb", dns.FUNCTION_NAMESPACE, 8000, "s3")  # played by the runtime's S3 (moto) server
SERVICE_URL = f"http://{SERVICE.name}.{SERVICE.namespace}:{SERVICE.port}"
KEY_SECRETS = ("dynamodb-access-key", "dynamodb-secret-key")
ENDPOINT_ENV, ENDPOINT_SECRET, REGION_ENV = "dynamodb_endpoint_url", "dynamodb-endpoint", "dynamodb_region"
TABLE_ENVS = {"dynamodb_temp_table": "faasgd-temp", "dynamodb_merged_table": "faasgd-merged"}  # env key -> default
DEFAULT_REGION = "us-east-1"
_TABLE = re.compile(r"[A-Za-z0-9_.-]{3,255}\Z")
_REGION = re.compile(r"[a-z0-9-]{1,32}\Z")


def asks_for_dynamodb(environment: Mapping[str, str]) -> bool:
    """True when the function's `channel` is dynamodb."""
    return str(environment.get(ASKING_KEY) or "").strip().lower() == ASKING_VALUE


def pod_spec(spec: FunctionSpec) -> FunctionSpec:
    """The spec a pod of a function asking for DynamoDB runs with: the endpoint and the key secrets added where the
    function has none of its own."""
    env = dict(spec.environment)
    if not str(env.get(ENDPOINT_ENV) or "").strip() and ENDPOINT_SECRET not in spec.secrets:
        env[ENDPOINT_ENV] = SERVICE_URL
    listed = spec.secrets + tuple(name for name in KEY_SECRETS if name not in spec.secrets)
    return replace(spec, environment=env, secrets=listed)


def tables_of(environment: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """(region, tables) a pod's function uses; a malformed name is left out (the function refuses it, naming it)."""
    region = str(environment.get(REGION_ENV) or "").strip() or DEFAULT_REGION
    names = (str(environment.get(key) or "").strip() or default for key, default in TABLE_ENVS.items())
    return (region if _REGION.match(region) else DEFAULT_REGION), tuple(n for n in names if _TABLE.match(n))


def make_table(endpoint: str, region: str, table: str) -> None:
    """Create `table` (CreateTable, key `k` a string, on demand) in `region`; one that exists is fine."""
    body = {"TableName": table, "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}]}
    request = urllib.request.Request(endpoint, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.CreateTable",
        # no signature is checked; the credential scope names the region the table is made in
        "Authorization": f"AWS4-HMAC-SHA256 Credential=local/20260101/{region}/dynamodb/aws4_request, "
                         "SignedHeaders=host, Signature=0"})
    try:
        with urllib.request.urlopen(request, timeout=10.0):
            return
    except urllib.error.HTTPError as error:
        if b"ResourceInUseException" in error.read():  # made before
            return
        raise StoreUnavailable(endpoint, f"creating the DynamoDB table {table} answered {error.code}") from None
    except OSError as error:
        raise StoreUnavailable(endpoint, f"creating the DynamoDB table {table}: {error}") from None
