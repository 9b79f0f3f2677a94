"""Where the DynamoDB tables of LambdaML's rounds are and how to sign in: the function's own configuration.

    settings = read_dynamodb_settings(os.environ)     endpoint, region, the two tables, keys (ConfigError naming the field)
    item_key(job_id, "rounds:r3:p0of1:w1")            "<job_id>/rounds:r3:p0of1:w1": the items' partition key

Decisions (as the S3 channel's, faasgd.channels.s3_settings):
- The keys come from secret files only (`dynamodb-access-key`, `dynamodb-secret-key` in FAASGD_SECRETS_DIR, else
  /var/openfaas/secrets), never from the environment or a request; no message ever holds them.
- The endpoint and the region are not secret: the function's environment (`dynamodb_endpoint_url`,
  `dynamodb_region`) or secret files (`dynamodb-endpoint`, `dynamodb-region`); the environment wins. No endpoint
  means AWS's own. An endpoint carrying credentials is refused.
- LambdaML's two tables: `dynamodb_temp_table` (the workers' contributions, overwritten and cleared round by
  round) and `dynamodb_merged_table` (each round's merged result, written once: a conditional put). Both have
  one string partition key, `k`; the function never creates them (a cluster's are made with the keys, the local
  runtime makes its own). Default names: faasgd-temp and faasgd-merged. They must differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from faasgd.channels.s3_settings import check_endpoint, read_channel_values
from faasgd.errors import ConfigError
from faasgd.store import keys

SECRET_FILES = {  # setting -> its secret file's name in the secrets dir
    "endpoint_url": "dynamodb-endpoint",
    "region": "dynamodb-region",
    "access_key": "dynamodb-access-key",
    "secret_key": "dynamodb-secret-key",
}
ENV_KEYS = {"endpoint_url": "dynamodb_endpoint_url", "region": "dynamodb_region",  # the function's environment
            "temp_table": "dynamodb_temp_table", "merged_table": "dynamodb_merged_table"}
DEFAULT_TABLES = {"temp_table": "faasgd-temp", "merged_table": "faasgd-merged"}
KEY_ATTRIBUTE = "k"  # both tables' partition key (a string), and their only key
_TABLE = re.compile(r"[A-Za-z0-9_.-]{3,255}\Z")  # DynamoDB's table naming rules


@dataclass(frozen=True)
class DynamoSettings:
    """How to reach the two tables and sign in; repr never shows the keys."""

    endpoint_url: str | None  # http(s)://host:port of a DynamoDB-compatible server; None: AWS's own endpoint
    region: str  # the signing region, and where the tables are
    temp_table: str  # the workers' contributions (LambdaML's temporary table)
    merged_table: str  # each round's merged result, written once (LambdaML's merged table)
    access_key: str = field(repr=False)  # from the secret file dynamodb-access-key
    secret_key: str = field(repr=False)  # from the secret file dynamodb-secret-key

    def secrets(self) -> tuple[str, ...]:
        """The values no message may contain."""
        return tuple(s for s in (self.access_key, self.secret_key) if s)

    def where(self) -> str:
        """The tables and the endpoint as messages name them (no key)."""
        return (f"dynamodb tables {self.temp_table}/{self.merged_table} in {self.region}"
                + (f" at {self.endpoint_url}" if self.endpoint_url else ""))


def read_dynamodb_settings(env: Mapping[str, str], secrets_dir: str | None = None) -> DynamoSettings:
    """The DynamoDB settings of this function: its environment and its secret files (never a request's body).

    secrets_dir: default env FAASGD_SECRETS_DIR, else /var/openfaas/secrets (as faasgd.store)."""
    values = read_channel_values(env, secrets_dir, SECRET_FILES, ENV_KEYS, "the DynamoDB channel")
    endpoint = (check_endpoint(values["endpoint_url"], "dynamodb_endpoint_url",
                               "dynamodb-access-key and dynamodb-secret-key") if values["endpoint_url"] else None)
    tables = {name: check_table(str(env.get(ENV_KEYS[name]) or "").strip() or default, ENV_KEYS[name])
              for name, default in DEFAULT_TABLES.items()}
    if tables["temp_table"] == tables["merged_table"]:
        raise ConfigError("dynamodb_merged_table", f"must differ from dynamodb_temp_table (the merged results are "
                                                   f"written once, the contributions overwritten), both are "
                                                   f"{tables['temp_table']!r}")
    return DynamoSettings(endpoint, values["region"], tables["temp_table"], tables["merged_table"], values["access_key"],
                          values["secret_key"])


def check_table(name: str, field_name: str) -> str:
    """`name` if it follows DynamoDB's table naming rules (3-255 of [A-Za-z0-9_.-]), else ConfigError(field_name)."""
    if not isinstance(name, str) or not _TABLE.match(name):
        raise ConfigError(field_name, f"a table name must be 3-255 characters of [A-Za-z0-9_.-], got {str(name)[:80]!r}")
    return name


def item_key(job_id: str, name: str) -> str:
    """The partition key of a job's object `name` ("job_id/name", both checked as faasgd.store.keys does)."""
    return f"{keys.check_job_id(job_id)}/{keys.check_name(name)}"


def chunk_key(key: str, write_id: str, index: int) -> str:
    """The partition key of chunk `index` of the write `write_id` of the object at `key` (see dynamodb.py)."""
    return f"{key}#{write_id}#{index}"
