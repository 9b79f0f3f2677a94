"""S3Space: a blob space over an S3-compatible service (boto3), as LambdaML's S3 storage.

    space = open_s3("s3://faasgd-jobs/stacking", os.environ)   settings from the function's env and secrets
    space.put_blob(job_id, "grad:3:0", data)                   one object per blob: prefix/job_id/name
    space.get_blob(job_id, "grad:3:0")                         its bytes, or None when there is none
    space.list_names(job_id); space.delete_job(job_id)         a job's objects; remove them all

The blob-space contract (as ParameterStore's, store/blobs.py): put_blob overwrites, and a reader sees the whole
new object or the old one, which a single S3 PUT gives. S3 has no atomic add, so there is no Downpour here:
the reduce patterns write objects per worker and round and one reader merges them.

Decisions:
- Integrity: each object carries the sha256 of its bytes in its metadata (`x-amz-meta-sha256`); a read checks
  the length and the digest, so a torn, truncated or foreign object (no digest) is StateLost, never data.
  Whoever reads a blob still checks its content (faasgd.stacking.safe_format): the digest is not a signature.
- Bounded: connect and read timeouts and botocore's retries (`standard` mode, `max_attempts` in all) are
  set on the client, so a dead endpoint is StoreUnavailable / StoreTimeout after at most about
  max_attempts x (connect + read timeout) plus botocore's backoff, never a hang.
- Errors name `url` ("s3://bucket/prefix at endpoint"): the bucket and endpoint, never a key. Any text
  a server sends back is scrubbed of the access and secret keys before it goes into a message.
- boto3 is imported on first use (the extra `s3`): importing faasgd.channels costs nothing without it.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from typing import Iterator, Mapping

from faasgd.channels.s3_settings import S3Settings, S3Url, object_key, object_prefix, parse_s3_url, read_s3_settings
from faasgd.errors import ConfigError, StateLost, StoreError, StoreTimeout, StoreUnavailable
from faasgd.store.blobs import MAX_BLOB_BYTES

DIGEST_META = "sha256"  # the object metadata key holding the hex sha256 of the body
DELETE_BATCH = 1000  # S3's DeleteObjects limit
NOT_FOUND = ("NoSuchKey", "404", "NotFound")
DENIED = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "InvalidToken", "ExpiredToken")


class S3Space:
    """A blob space over one bucket and prefix of an S3-compatible service (thread-safe: boto3's client is)."""

    def __init__(self, url: S3Url, settings: S3Settings, *, timeout_s: float = 5.0, max_attempts: int = 2,
                 client=None):
        if not 0 < timeout_s <= 300:
            raise ConfigError("timeout_s", f"must be in (0, 300] seconds, got {timeout_s!r}")
        if not 1 <= max_attempts <= 10:
            raise ConfigError("max_attempts", f"must be in [1, 10], got {max_attempts!r}")
        self.location, self.settings = url, settings
        self.url = url.text + (f" at {settings.endpoint_url}" if settings.endpoint_url else "")
        self.timeout_s, self.max_attempts = timeout_s, max_attempts
        self._client = client

    def __repr__(self) -> str:
        return f"S3Space({self.url!r})"

    @property
    def client(self):
        """The boto3 S3 client, made on first use (importing boto3 then)."""
        if self._client is None:
            self._client = make_client(self.settings, self.timeout_s, self.max_attempts)
        return self._client

    def ping(self) -> None:
        """Check the bucket answers to these credentials (StoreError naming the bucket when not)."""
        with self._errors():
            self.client.head_bucket(Bucket=self.location.bucket)

    def put_blob(self, job_id: str, name: str, data: bytes) -> None:
        """Write object `name` of a job (overwrites one of the same name); everything is checked first."""
        key = object_key(self.location, job_id, name)
        if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) > MAX_BLOB_BYTES:
            raise ConfigError("data", f"must be bytes, at most {MAX_BLOB_BYTES}, got {type(data).__name__}")
        body = bytes(data)
        with self._errors(name):
            self.client.put_object(Bucket=self.location.bucket, Key=key, Body=body, ContentLength=len(body),
                                   Metadata={DIGEST_META: hashlib.sha256(body).hexdigest()})

    def get_blob(self, job_id: str, name: str) -> bytes | None:
        """Object `name` of a job, or None when there is none (StateLost when it fails its length or digest)."""
        key = object_key(self.location, job_id, name)
        with self._errors(name):
            try:
                answer = self.client.get_object(Bucket=self.location.bucket, Key=key)
            except self._client_error() as e:
                if _code(e) in NOT_FOUND:
                    return None
                raise
            data = answer["Body"].read()
        digest = (answer.get("Metadata") or {}).get(DIGEST_META)
        if digest is None:
            raise StateLost(self.url, f"job {job_id!r}: object {name!r} has no {DIGEST_META} metadata (not written "
                                      f"by faasgd)")
        if len(data) != answer.get("ContentLength", len(data)) or hashlib.sha256(data).hexdigest() != digest:
            raise StateLost(self.url, f"job {job_id!r}: object {name!r} does not match its {DIGEST_META} "
                                      f"(torn or changed object)")
        return data

    def list_names(self, job_id: str) -> list[str]:
        """The names of a job's objects, sorted."""
        prefix = object_prefix(self.location, job_id)
        return sorted(key[len(prefix):] for key in self._keys(prefix))

    def delete_job(self, job_id: str) -> int:
        """Remove every object of a job (and nothing else); returns how many there were."""
        prefix = object_prefix(self.location, job_id)
        found = list(self._keys(prefix))
        with self._errors():
            for i in range(0, len(found), DELETE_BATCH):
                batch = [{"Key": key} for key in found[i:i + DELETE_BATCH]]
                answer = self.client.delete_objects(Bucket=self.location.bucket,
                                                    Delete={"Objects": batch, "Quiet": True})
                if answer.get("Errors"):
                    first = answer["Errors"][0]
                    raise StoreError(self.url, f"job {job_id!r}: {len(answer['Errors'])} objects not deleted "
                                               f"({self._scrub(first.get('Code', ''))})")
        return len(found)

    def _keys(self, prefix: str) -> Iterator[str]:
        with self._errors():
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.location.bucket,
                                                                           Prefix=prefix)
            keys = [item["Key"] for page in pages for item in page.get("Contents", ())]
        yield from keys

    def _client_error(self):
        from botocore.exceptions import ClientError

        return ClientError

    @contextmanager
    def _errors(self, name: str | None = None):
        """botocore's errors as faasgd's: StoreUnavailable, StoreTimeout, StoreError, naming `url`."""
        from botocore import exceptions as bx

        what = f"object {name!r}: " if name else ""
        try:
            yield
        except (bx.ConnectTimeoutError, bx.ReadTimeoutError) as e:
            raise StoreTimeout(self.url, f"{what}no answer within {self.timeout_s:g} s "
                                         f"({type(e).__name__})") from None
        except (bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ConnectionError) as e:
            raise StoreUnavailable(self.url, f"{what}cannot connect ({type(e).__name__})") from None
        except bx.ClientError as e:
            raise self._client_failure(e, what) from None
        except bx.BotoCoreError as e:
            raise StoreError(self.url, f"{what}{self._scrub(str(e))}") from None

    def _client_failure(self, error, what: str) -> StoreError:
        code, bucket = _code(error), self.location.bucket
        if code in ("NoSuchBucket",) or (code in NOT_FOUND and not what):
            return StoreError(self.url, f"{what}no bucket {bucket!r} at this endpoint (create it first)")
        if code in DENIED:
            return StoreUnavailable(self.url, f"{what}access to bucket {bucket!r} denied ({code}): check the secret "
                                              f"files s3-access-key and s3-secret-key")
        message = error.response.get("Error", {}).get("Message", "")
        return StoreError(self.url, f"{what}bucket {bucket!r}: {code} {self._scrub(str(message))[:200]}".rstrip())

    def _scrub(self, text: str) -> str:
        for secret in self.settings.secrets():
            text = text.replace(secret, "***")
        return text


def _code(error) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def make_client(settings: S3Settings, timeout_s: float, max_attempts: int):
    """A boto3 S3 client with bounded timeouts and retries; path-style addressing on a custom endpoint."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=timeout_s, read_timeout=timeout_s, region_name=settings.region,
                    retries={"mode": "standard", "max_attempts": max_attempts},
                    s3={"addressing_style": "path"} if settings.endpoint_url else None,
                    request_checksum_calculation="when_required", response_checksum_validation="when_required")
    session = boto3.session.Session()  # its own session: no state shared with other users of boto3
    return session.client("s3", endpoint_url=settings.endpoint_url, aws_access_key_id=settings.access_key,
                          aws_secret_access_key=settings.secret_key, config=config)


def open_s3(url: str, env: Mapping[str, str], *, secrets_dir: str | None = None, timeout_s: float = 5.0,
            max_attempts: int = 2, field_name: str = "s3_url") -> S3Space:
    """The S3Space of `url` with this function's settings (nothing is contacted until the first call)."""
    return S3Space(parse_s3_url(url, field_name), read_s3_settings(env, secrets_dir), timeout_s=timeout_s,
                   max_attempts=max_attempts)
