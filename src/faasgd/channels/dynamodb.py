"""DynamoSpace: LambdaML's DynamoDB channel, a blob space over two tables (boto3 against DynamoDB's API).

    space = open_dynamodb(os.environ)                   settings from the function's env and secrets
    space.put_blob(job_id, "rounds:r3:p0of1:w1", data)  the temporary table: overwrites, as every blob space
    space.get_blob(job_id, "rounds:r3:p0of1:w1")        its bytes, or None
    space.put_merged(job_id, "rounds:r3:m0of1", data)   the merged table, once: False when a write came first
    space.get_merged(job_id, name); space.clear_merged(job_id, name)

LambdaML keeps the workers' contributions in a temporary table and the merged result in a merged table; so does
this space. The rounds (faasgd.lambdaml.rounds.exchange) write contributions with put_blob and merged slices with
put_merged, whose put carries ConditionExpression attribute_not_exists: of two mergers of one round (a worker and
its re-invocation, a redelivered call) exactly one result is stored and both go on with it.

Items (one partition key `k` = "job_id/name", faasgd.channels.dynamodb_settings.item_key):
- DynamoDB refuses an item over 400 KB (attribute names and values), which is why LambdaML trains no CNN through
  it. Here a value up to CHUNK_BYTES sits in its item (`v`); a longer one is split into chunks of CHUNK_BYTES, each
  an item of its own keyed by the write's id and its index, written FIRST; then the object's item (`chunks`,
  `write`, `length`, `sha256`) makes the new value visible at once. A reader sees the old value or the new one:
  it reads the object's item, then the chunks of that write, and reads again (at most READ_TRIES times) when an
  overwrite removed them meanwhile. Cost: 1 + ceil(length / CHUNK_BYTES) requests per write and per read.
- An overwrite of a chunked value removes the old chunks after the new item is in (the put's condition returns
  the old item when it had chunks), so clearing a round's objects frees its items.
- Integrity as the S3 channel's: the object's item carries the sha256 of the value; a read checks the length and
  the digest, so a torn or foreign item is StateLost, never data.
- Bounded as the S3 channel's: connect and read timeouts and botocore's retries (`standard`, `max_attempts`).
  Errors name the tables and the endpoint, never a key, and any text a server sends back is scrubbed of the keys.
"""

from __future__ import annotations

import hashlib
import uuid
from contextlib import contextmanager
from typing import Mapping

from faasgd.channels.dynamodb_settings import DynamoSettings, chunk_key, item_key, read_dynamodb_settings
from faasgd.errors import ConfigError, StateLost, StoreError, StoreTimeout, StoreUnavailable
from faasgd.store.blobs import MAX_BLOB_BYTES

CHUNK_BYTES = 380_000  # a value's bytes per item: DynamoDB's 400 KB item limit less the key and attribute names
READ_TRIES = 3  # reads of an object whose chunks an overwrite removed meanwhile, before StateLost
WRITE_TRIES = 3  # overwrites racing other overwrites of the same object, before StoreError
NAMES = {"#k": "k", "#c": "chunks", "#w": "write"}
DENIED = ("UnrecognizedClientException", "AccessDeniedException", "InvalidSignatureException",
          "MissingAuthenticationTokenException", "ExpiredTokenException", "IncompleteSignatureException")


class DynamoSpace:
    """The two tables of one DynamoDB(-compatible) endpoint as a blob space (thread-safe: boto3's client is)."""

    def __init__(self, settings: DynamoSettings, *, timeout_s: float = 5.0, max_attempts: int = 2, client=None):
        if not 0 < timeout_s <= 300:
            raise ConfigError("timeout_s", f"must be in (0, 300] seconds, got {timeout_s!r}")
        if not 1 <= max_attempts <= 10:
            raise ConfigError("max_attempts", f"must be in [1, 10], got {max_attempts!r}")
        self.settings, self.url = settings, settings.where()
        self.timeout_s, self.max_attempts = timeout_s, max_attempts
        self._client = client

    def __repr__(self) -> str:
        return f"DynamoSpace({self.url!r})"

    @property
    def client(self):
        """The boto3 DynamoDB client, made on first use (importing boto3 then)."""
        if self._client is None:
            self._client = make_client(self.settings, self.timeout_s, self.max_attempts)
        return self._client

    def ping(self) -> None:
        """Check both tables answer to these credentials (StoreError naming the table when not)."""
        for table in (self.settings.temp_table, self.settings.merged_table):
            with self._errors(table):
                self.client.describe_table(TableName=table)

    def put_blob(self, job_id: str, name: str, data: bytes) -> None:
        """Write object `name` of a job in the temporary table (overwrites one of the same name)."""
        self._write(self.settings.temp_table, item_key(job_id, name), check_data(data), once=False)

    def get_blob(self, job_id: str, name: str) -> bytes | None:
        """Object `name` of a job in the temporary table, or None (StateLost when it fails its length or digest)."""
        return self._read(self.settings.temp_table, item_key(job_id, name))

    def put_merged(self, job_id: str, name: str, data: bytes) -> bool:
        """Write object `name` in the merged table unless it is there: True when this call wrote it."""
        return self._write(self.settings.merged_table, item_key(job_id, name), check_data(data), once=True)

    def get_merged(self, job_id: str, name: str) -> bytes | None:
        """Object `name` of a job in the merged table, or None."""
        return self._read(self.settings.merged_table, item_key(job_id, name))

    def clear_merged(self, job_id: str, name: str) -> None:
        """Overwrite object `name` in the merged table with b"" (a round's result, cleared two rounds later)."""
        self._write(self.settings.merged_table, item_key(job_id, name), b"", once=False)

    def _write(self, table: str, key: str, data: bytes, *, once: bool) -> bool:
        write = uuid.uuid4().hex[:16]
        chunks = 0 if len(data) <= CHUNK_BYTES else -(-len(data) // CHUNK_BYTES)
        item = {"k": {"S": key}, "write": {"S": write}, "chunks": {"N": str(chunks)},
                "length": {"N": str(len(data))}, "sha256": {"S": hashlib.sha256(data).hexdigest()}}
        if chunks == 0:
            item["v"] = {"B": data}
        with self._errors(table, key):
            for i in range(chunks):
                self.client.put_item(TableName=table, Item={"k": {"S": chunk_key(key, write, i)},
                                                           "v": {"B": data[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]}})
            if once:
                old = self._put(table, item, "attribute_not_exists(#k)", {})
                if old is not None:  # merged before: this write's chunks go, the first write stays
                    self._drop_chunks(table, key, write, chunks)
                return old is None
            old = self._put(table, item, "attribute_not_exists(#k) OR #c = :zero", {":zero": {"N": "0"}})
            for _ in range(WRITE_TRIES):
                if old is None:
                    return True
                before = old.get("write")
                if before is None:  # an item faasgd did not write (no write id): replaced, nothing of it to drop
                    written = self._put(table, item, "attribute_not_exists(#w)", {})
                else:  # over that very write, then its chunks go
                    written = self._put(table, item, "#w = :old", {":old": before})
                    if written is None:
                        self._drop_chunks(table, key, before.get("S", ""), int(old.get("chunks", {}).get("N", 0)))
                old = written
        raise StoreError(self.url, f"table {table}: item {key!r} was overwritten by others {WRITE_TRIES} times "
                                   f"during this write")

    def _put(self, table: str, item: dict, condition: str, values: dict) -> dict | None:
        """put_item under `condition`: None when written, else the item that failed it."""
        from botocore.exceptions import ClientError

        try:
            self.client.put_item(TableName=table, Item=item, ConditionExpression=condition,
                                 ExpressionAttributeNames={k: v for k, v in NAMES.items() if k in condition},
                                 **({"ExpressionAttributeValues": values} if values else {}),
                                 ReturnValuesOnConditionCheckFailure="ALL_OLD")
            return None
        except ClientError as e:
            if _code(e) != "ConditionalCheckFailedException":
                raise
            return e.response.get("Item") or {}  # no old item sent back: the next attempt asks again

    def _drop_chunks(self, table: str, key: str, write: str, chunks: int) -> None:
        for i in range(chunks):
            self.client.delete_item(TableName=table, Key={"k": {"S": chunk_key(key, write, i)}})

    def _read(self, table: str, key: str) -> bytes | None:
        with self._errors(table, key):
            for _ in range(READ_TRIES):
                item = self.client.get_item(TableName=table, Key={"k": {"S": key}}, ConsistentRead=True).get("Item")
                if item is None:
                    return None
                data = self._value(table, key, item)
                if data is not None:
                    return data
        raise StateLost(self.url, f"table {table}: item {key!r}: its chunks were gone {READ_TRIES} times (removed "
                                  f"by overwrites, or lost)")

    def _value(self, table: str, key: str, item: dict) -> bytes | None:
        """The checked value of an object's item; None when one of its chunks is gone (overwritten meanwhile)."""
        try:
            chunks, length, digest = int(item["chunks"]["N"]), int(item["length"]["N"]), item["sha256"]["S"]
        except (KeyError, TypeError, ValueError):
            raise StateLost(self.url, f"table {table}: item {key!r} is not a faasgd object (no chunks, length "
                                      f"or sha256)") from None
        if chunks == 0:
            data = bytes(item.get("v", {}).get("B", b""))
        else:
            parts = []
            for i in range(chunks):
                got = self.client.get_item(TableName=table, Key={"k": {"S": chunk_key(key, item["write"]["S"], i)}},
                                           ConsistentRead=True).get("Item")
                if got is None:
                    return None
                parts.append(bytes(got["v"]["B"]))
            data = b"".join(parts)
        if len(data) != length or hashlib.sha256(data).hexdigest() != digest:
            raise StateLost(self.url, f"table {table}: item {key!r} does not match its length and sha256 (torn or "
                                      f"changed item)")
        return data

    @contextmanager
    def _errors(self, table: str, key: str | None = None):
        """botocore's errors as faasgd's: StoreUnavailable, StoreTimeout, StoreError, naming the tables."""
        from botocore import exceptions as bx

        what = f"table {table}" + (f", item {key!r}" if key else "") + ": "
        try:
            yield
        except (bx.ConnectTimeoutError, bx.ReadTimeoutError) as e:
            raise StoreTimeout(self.url, f"{what}no answer within {self.timeout_s:g} s ({type(e).__name__})") from None
        except (bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ConnectionError) as e:
            raise StoreUnavailable(self.url, f"{what}cannot connect ({type(e).__name__})") from None
        except bx.ClientError as e:
            code, message = _code(e), self._scrub(str(e.response.get("Error", {}).get("Message", "")))[:200]
            if code == "ResourceNotFoundException":
                raise StoreError(self.url, f"{what}no such table at this endpoint (create it first)") from None
            if code in DENIED:
                raise StoreUnavailable(self.url, f"{what}access denied ({code}): check the secret files "
                                                 f"dynamodb-access-key and dynamodb-secret-key") from None
            raise StoreError(self.url, f"{what}{code} {message}".rstrip()) from None
        except bx.BotoCoreError as e:
            raise StoreError(self.url, f"{what}{self._scrub(str(e))}") from None

    def _scrub(self, text: str) -> str:
        for secret in self.settings.secrets():
            text = text.replace(secret, "***")
        return text


def check_data(data) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) > MAX_BLOB_BYTES:
        raise ConfigError("data", f"must be bytes, at most {MAX_BLOB_BYTES}, got {type(data).__name__}")
    return bytes(data)


def _code(error) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def make_client(settings: DynamoSettings, timeout_s: float, max_attempts: int):
    """A boto3 DynamoDB client with bounded timeouts and retries."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=timeout_s, read_timeout=timeout_s, region_name=settings.region,
                    retries={"mode": "standard", "max_attempts": max_attempts})
    session = boto3.session.Session()  # its own session: no state shared with other users of boto3
    return session.client("dynamodb", endpoint_url=settings.endpoint_url, aws_access_key_id=settings.access_key,
                          aws_secret_access_key=settings.secret_key, config=config)


def open_dynamodb(env: Mapping[str, str], *, secrets_dir: str | None = None, timeout_s: float = 5.0,
                  max_attempts: int = 2) -> DynamoSpace:
    """The DynamoSpace of this function's settings (nothing is contacted until the first call)."""
    return DynamoSpace(read_dynamodb_settings(env, secrets_dir), timeout_s=timeout_s, max_attempts=max_attempts)
