"""Where an S3-compatible space is and how to sign in: the `s3://bucket/prefix` URL and the S3 settings.

    url = parse_s3_url("s3://faasgd-jobs/stacking")             bucket and prefix, checked (ConfigError naming s3_url)
    settings = read_s3_settings(os.environ)                       endpoint, region, keys: the function's own
    key = object_key(url, job_id, "model:3")                      "stacking/<job_id>/model:3"

Decisions:
- The URL holds no secret and no endpoint: `s3://key:secret@bucket` is refused (ConfigError naming s3_url,
  the secret masked), so a URL can be printed and stored as it is.
- The access key and the secret key come from secret files only (`s3-access-key`, `s3-secret-key` in
  FAASGD_SECRETS_DIR, else /var/openfaas/secrets), as the Redis password does (`store-password`); never from
  the environment (stack.yml environment is plain text in the image's configuration) and never from a request.
- The endpoint and the region are not secret: the function's environment (`s3_endpoint_url`, `s3_region`)
  or, when a cluster keeps them with the keys, secret files (`s3-endpoint`, `s3-region`); the environment
  wins. No endpoint means AWS's own. An endpoint carrying credentials is refused.
- Objects are `prefix/job_id/name`: job ids and names as faasgd.store.keys checks them, minus "." and "..",
  so no key has an empty, "." or ".." segment that an S3-compatible server or a sync tool could read as a path.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import urlsplit

from faasgd.errors import ConfigError
from faasgd.store import SECRETS_DIR, keys

SECRET_FILES = {  # setting -> its secret file's name in the secrets dir
    "endpoint_url": "s3-endpoint",
    "region": "s3-region",
    "access_key": "s3-access-key",
    "secret_key": "s3-secret-key",
}
ENV_KEYS = {"endpoint_url": "s3_endpoint_url", "region": "s3_region"}  # the function's environment (not secret)
DEFAULT_REGION = "us-east-1"
EXAMPLE = "s3://bucket or s3://bucket/prefix (bucket: 3-63 of [a-z0-9.-]; prefix: segments of [A-Za-z0-9_.-])"
MAX_PREFIX = 256  # characters; a key is prefix + 1 + 64 + 1 + 128, well below S3's 1024 bytes
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_SEGMENT = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_REGION = re.compile(r"[a-z0-9-]{1,32}\Z")


@dataclass(frozen=True)
class S3Url:
    """A parsed `s3://bucket/prefix`; `text` is the URL as given (it holds no secret)."""

    bucket: str  # the bucket (AWS's naming rules: 3-63 lowercase letters, digits, dots, hyphens)
    prefix: str  # key prefix without leading or trailing "/", "" for none
    text: str  # s3://bucket[/prefix], normalised


@dataclass(frozen=True)
class S3Settings:
    """How to reach and sign in to the S3-compatible service; repr never shows the keys."""

    endpoint_url: str | None  # http(s)://host:port of an S3-compatible server; None: AWS's own endpoint
    region: str  # signing region (S3-compatible servers mostly accept any; AWS needs the bucket's)
    access_key: str = field(repr=False)  # from the secret file s3-access-key
    secret_key: str = field(repr=False)  # from the secret file s3-secret-key

    def secrets(self) -> tuple[str, ...]:
        """The values no message may contain."""
        return tuple(s for s in (self.access_key, self.secret_key) if s)


def parse_s3_url(url: str, field_name: str = "s3_url") -> S3Url:
    """Parse and validate an S3 URL; every problem is a ConfigError naming `field_name`."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(field_name, f"expected {EXAMPLE}, got {url!r}")
    masked = mask_url(url)
    if not url.lower().startswith("s3://"):
        raise ConfigError(field_name, f"must start with s3:// ({EXAMPLE}), got {masked!r}")
    parts = urlsplit(url)
    if "@" in url:
        raise ConfigError(field_name, f"takes no credentials (they come from the secret files s3-access-key and "
                                      f"s3-secret-key), got {masked!r}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ConfigError(field_name, f"query parameters and fragments are not supported, got {masked!r}")
    bucket = check_bucket(parts.netloc, field_name)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if path.endswith("/"):
        path = path[:-1]
    if len(path) > MAX_PREFIX:
        raise ConfigError(field_name, f"prefix must be at most {MAX_PREFIX} characters, got {len(path)}")
    for segment in path.split("/") if path else ():
        if not _SEGMENT.match(segment) or segment in (".", ".."):
            raise ConfigError(field_name, f"prefix must be segments of 1-64 characters [A-Za-z0-9_.-] (not . or ..) "
                                          f"separated by single '/', got {path!r}")
    return S3Url(bucket, path, f"s3://{bucket}" + (f"/{path}" if path else ""))


def check_bucket(bucket: str, field_name: str = "s3_url") -> str:
    """`bucket` if it follows AWS's bucket naming rules, else a ConfigError naming `field_name`."""
    rules = "3-63 characters of [a-z0-9.-], starting and ending with a letter or digit, no '..', not an IP address"
    if not isinstance(bucket, str) or not _BUCKET.match(bucket) or ".." in bucket or ".-" in bucket \
            or "-." in bucket or _is_ip(bucket):
        raise ConfigError(field_name, f"bucket must be {rules}, got {str(bucket)[:80]!r}")
    return bucket


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def object_prefix(url: S3Url, job_id: str) -> str:
    """The key prefix of every object of a job: "prefix/job_id/" (job id checked)."""
    keys.check_job_id(job_id)
    if job_id in (".", ".."):
        raise ConfigError("job_id", f"must not be . or .. (a path segment in S3 keys), got {job_id!r}")
    return (f"{url.prefix}/" if url.prefix else "") + f"{job_id}/"


def object_key(url: S3Url, job_id: str, name: str) -> str:
    """The key of a job's object `name` (name checked as faasgd.store.keys does, and not . or ..)."""
    keys.check_name(name)
    if name in (".", ".."):
        raise ConfigError("name", f"must not be . or .. (a path segment in S3 keys), got {name!r}")
    return object_prefix(url, job_id) + name


def read_s3_settings(env: Mapping[str, str], secrets_dir: str | None = None) -> S3Settings:
    """The S3 settings of this function: its environment and its secret files (never a request's body).

    secrets_dir: default env FAASGD_SECRETS_DIR, else /var/openfaas/secrets (as faasgd.store).
    """
    values = read_channel_values(env, secrets_dir, SECRET_FILES, ENV_KEYS, "the S3 channel")
    endpoint = check_endpoint(values["endpoint_url"]) if values["endpoint_url"] else None
    return S3Settings(endpoint, values["region"], values["access_key"], values["secret_key"])


def read_channel_values(env: Mapping[str, str], secrets_dir: str | None, secret_files: Mapping[str, str],
                        env_keys: Mapping[str, str], channel: str) -> dict[str, str]:
    """A channel's endpoint_url, region, access_key and secret_key (S3's and DynamoDB's alike): each from the
    function's environment (`env_keys`, not secret) or else its secret file (`secret_files`); the keys required,
    the region defaulted and checked, each refusal naming its secret file or key and never echoing a value.
    secrets_dir: default env FAASGD_SECRETS_DIR, else /var/openfaas/secrets (as faasgd.store)."""
    directory = secrets_dir or env.get("FAASGD_SECRETS_DIR") or os.environ.get("FAASGD_SECRETS_DIR") or SECRETS_DIR
    values = {}
    for setting, filename in secret_files.items():
        env_key = env_keys.get(setting)
        from_env = str(env.get(env_key) or "").strip() if env_key else ""
        values[setting] = from_env or read_secret(directory, filename)
    for setting in ("access_key", "secret_key"):
        if not values[setting]:
            raise ConfigError(secret_files[setting], f"{channel} needs the secret file {secret_files[setting]} "
                                                     f"in {directory} (the function's secrets)")
    values["region"] = values["region"] or DEFAULT_REGION
    if not _REGION.match(values["region"]):
        raise ConfigError(env_keys["region"], f"must be 1-32 characters of [a-z0-9-] like us-east-1, got "
                                              f"{values['region'][:40]!r}")
    return values


def check_endpoint(endpoint: str, field_name: str = "s3_endpoint_url",
                   key_files: str = "s3-access-key and s3-secret-key") -> str:
    """An endpoint URL `http(s)://host[:port]`, without credentials, query or fragment (ConfigError naming
    `field_name` otherwise; `key_files` names where the keys come from instead)."""
    masked = mask_url(endpoint)
    parts = urlsplit(endpoint)
    try:
        port_ok = parts.port is None or 1 <= parts.port <= 65535
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(field_name, f"must be http(s)://host[:port], got {masked!r}")
    if "@" in endpoint or parts.query or parts.fragment:
        raise ConfigError(field_name, f"takes no credentials, query or fragment (keys come from the secret "
                                      f"files {key_files}), got {masked!r}")
    return endpoint.rstrip("/")


def mask_url(url: str) -> str:
    """`url` with any user-info (a key, a key:secret, a token) replaced by ***: the form messages show.

    Everything before the last "@" goes: a secret key may hold "/", which would end the host part early.
    """
    text = str(url)
    if "@" in text:
        scheme, sep, _ = text.partition("://")
        text = (f"{scheme}://" if sep and "@" not in scheme else "") + "***@" + text.rpartition("@")[2]
    return text[:200]


def read_secret(directory: str, filename: str) -> str:
    """The stripped text of secret file `filename` in `directory`, "" when there is none."""
    try:
        with open(os.path.join(directory, filename), encoding="utf-8") as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""
