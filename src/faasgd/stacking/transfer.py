"""How objects move between the stacking functions (config key `transfer`, vSwarm's TRANSFER_TYPE).

    inline  the object travels in the request or answer body, base64 text; a body over the receiving
            function's max_request_bytes is a 413 (the driver checks its job's bodies before it starts)
    store   the object is a blob of the job in its store (Redis or Memcached, chunked below Memcached's
            1 MB item limit: store/blobs.py); bodies carry only its name, which must be the one expected
    s3      the object is an object of the job in the function's S3-compatible space (faasgd.channels:
            `s3_url` from the function's environment, endpoint and keys from its secret files); bodies name it
Either way the bytes are faasgd's npz format and are decoded by safe_format, never unpickled.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any, Mapping

from faasgd.errors import ConfigError
from faasgd.stacking.record_store import BlobStore
from faasgd.stacking.safe_format import UnsafeObject

B64_FACTOR = 4 / 3


class Inline:
    """Objects as base64 text in the bodies."""

    name = "inline"

    def put(self, name: str, data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    def get(self, value: Any, name: str) -> bytes:
        if not isinstance(value, str):
            raise ConfigError(name, f"must be the object as base64 text (transfer inline), got {type(value).__name__}")
        try:
            return base64.b64decode(value.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise UnsafeObject(name, "not base64 text") from None


class InStore:
    """Objects as blobs of the job in its store; bodies name them."""

    name = "store"

    def __init__(self, store: BlobStore, job_id: str):
        self.store, self.job_id = store, job_id

    def put(self, name: str, data: bytes) -> str:
        self.store.put_blob(self.job_id, name, data)
        return name

    def get(self, value: Any, name: str) -> bytes:
        if value != name:
            raise ConfigError(name, f"must name the job's object {name!r} (transfer {self.name}), got {str(value)[:80]!r}")
        data = self.store.get_blob(self.job_id, name)
        if data is None:
            raise ConfigError(name, f"job {self.job_id!r} has no object {name!r} in its {self.name}")
        return data


class InS3(InStore):
    """Objects as objects of the job in the function's S3-compatible space (an S3Space: the same blob calls)."""

    name = "s3"


def mover(transfer: str, store: BlobStore, job_id: str, env: Mapping[str, str] | None = None) -> Inline | InStore:
    """What moves a job's objects for `transfer` (inline, store or s3); `env` is the function's environment
    (default: this process's), read for transfer s3."""
    if transfer == "s3":
        from faasgd.channels import configured_space

        return InS3(configured_space(os.environ if env is None else env), job_id)
    return Inline() if transfer == "inline" else InStore(store, job_id)
