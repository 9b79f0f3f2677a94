"""Blobs: opaque bytes of a job (the stacking functions' npz objects), chunked below the store's item limit.

    store.put_blob(job_id, "model:3", data)     chunks first, then the meta (length, chunks, sha256): a blob
    store.get_blob(job_id, "model:3")           whose meta is there is whole; None when there is none
    store.delete_blob(job_id, "model:3")        the meta first (so it reads as absent), then the chunks
A blob's digest catches a torn or mixed write (chunks of two writes under one meta), not a hostile one:
whoever reads a blob checks its content (faasgd.stacking.safe_format). Nothing here decodes what it holds.
"""

from __future__ import annotations

import hashlib
import json

from faasgd.errors import ConfigError, StateLost
from faasgd.store import keys

BLOB_CHUNK_BYTES = 512 << 10  # below memcached's default 1 MB item limit, with room for the key
MAX_BLOB_BYTES = 256 << 20


class BlobsMixin:
    """put_blob / get_blob on the store's _put and _get_many primitives (mixed into ParameterStore)."""

    def put_blob(self, job_id: str, name: str, data: bytes, ttl_s: int = 0) -> None:
        """Write blob `name` of a job (overwrites one of the same name); it expires after `ttl_s` (0: the job's
        keep_s, store/expiry.py)."""
        if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_BLOB_BYTES:
            raise ConfigError("data", f"must be bytes, at most {MAX_BLOB_BYTES}, got {type(data).__name__}")
        ttl = self._expiry(job_id, self._ttl(ttl_s))
        count = -(-len(data) // BLOB_CHUNK_BYTES)
        meta = json.dumps({"length": len(data), "chunks": count, "sha256": hashlib.sha256(data).hexdigest()}).encode()
        names = keys.blob_chunks(job_id, name, count)
        with self._errors():
            for i, key in enumerate(names):
                self._put(key, bytes(data[i * BLOB_CHUNK_BYTES:(i + 1) * BLOB_CHUNK_BYTES]), ttl)
            self._put(keys.blob_meta(job_id, name), meta, ttl)

    def get_blob(self, job_id: str, name: str) -> bytes | None:
        """Blob `name` of a job, or None when it has none (StateLost when its chunks are gone or torn)."""
        with self._errors():
            (raw,) = self._get_many([keys.blob_meta(job_id, name)])
        if raw is None:
            return None
        meta = self._decode(_blob_meta, raw, f"job {job_id!r} blob {name!r}")
        with self._errors():
            chunks = self._get_many(keys.blob_chunks(job_id, name, meta["chunks"])) if meta["chunks"] else []
        if any(c is None for c in chunks):
            raise StateLost(self.url, f"job {job_id!r}: chunks of blob {name!r} missing (evicted?)")
        data = b"".join(chunks)
        if len(data) != meta["length"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
            raise StateLost(self.url, f"job {job_id!r}: blob {name!r} does not match its meta (torn write?)")
        return data

    def delete_blob(self, job_id: str, name: str) -> None:
        """Remove blob `name` of a job: its meta first (it then reads as absent), then its chunks; absent is fine."""
        with self._errors():
            (raw,) = self._get_many([keys.blob_meta(job_id, name)])
        if raw is None:
            return
        meta = self._decode(_blob_meta, raw, f"job {job_id!r} blob {name!r}")
        with self._errors():
            self._delete(keys.blob_meta(job_id, name))
            for key in keys.blob_chunks(job_id, name, meta["chunks"]):
                self._delete(key)


def _blob_meta(raw: bytes) -> dict:
    try:
        meta = json.loads(raw)
        length, chunks, digest = int(meta["length"]), int(meta["chunks"]), str(meta["sha256"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"unreadable blob meta {raw[:80]!r}: {e}") from e
    if not 0 <= length <= MAX_BLOB_BYTES or chunks != -(-length // BLOB_CHUNK_BYTES) or len(digest) != 64:
        raise ValueError(f"invalid blob meta {raw[:80]!r}")
    return {"length": length, "chunks": chunks, "sha256": digest}
