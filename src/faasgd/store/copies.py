"""Kept copies of parameters (`m:<name>`): a job's model, which pushes never change.

Mixed into ParameterStore: chunked below the item limit like the weights (codec.py), the meta written
last, so a copy whose meta is there is whole. Who keeps which copy, and why: faasgd.job.model_file.
"""

from __future__ import annotations

import numpy as np

from faasgd.errors import StateLost
from faasgd.store import codec, keys


class CopiesMixin:
    """keep_copy / read_copy on the store's _put and _get_many primitives."""

    def keep_copy(self, job_id: str, name: str, flat: np.ndarray) -> None:
        """Write a copy of parameters that pushes never change (`m:<name>`), chunked below the item limit;
        its meta last, so a copy whose meta is there is whole. Overwrites a copy of the same name. It expires
        with the job's other keys (store/expiry.py)."""
        data = codec.as_vector(flat, "flat")
        meta = codec.WeightsMeta(data.size, self.chunk_floats)
        names, ttl = keys.model_chunks(job_id, name, meta.chunks), self._expiry(job_id)
        with self._errors():
            for key, chunk in zip(names, codec.encode_chunks(data, meta)):
                self._put(key, chunk, ttl)
            self._put(keys.model_meta(job_id, name), codec.meta_to_bytes(meta), ttl)

    def read_copy(self, job_id: str, name: str) -> np.ndarray | None:
        """A copy written by keep_copy (float32), or None when there is none (or it is not whole yet)."""
        with self._errors():
            (raw,) = self._get_many([keys.model_meta(job_id, name)])
        if raw is None:
            return None
        meta = self._decode(codec.meta_from_bytes, raw, f"job {job_id!r} copy {name!r}")
        with self._errors():
            chunks = self._get_many(keys.model_chunks(job_id, name, meta.chunks))
        if any(c is None for c in chunks):
            raise StateLost(self.url, f"job {job_id!r}: chunks of its kept parameters {name!r} missing (evicted?)")
        return self._decode(lambda c: codec.decode_into(c, meta, np.empty(meta.length, np.float32)), chunks,
                            f"job {job_id!r} copy {name!r}")
