"""What the stacking workload asks of a store: a job's JSON records, its objects (blobs) and the server's clock.

    store.add_record(job_id, "config", {...})   set-if-absent: its presence means "the job exists"
    store.put_blob(job_id, "model:3", data)     an object of transfer `store` (bytes; stacking/safe_format.py)
    store.server_time()                         the clock a job's deadline is on

Every faasgd store (faasgd.store.ParameterStore) is a RecordStore; the stacking modules name this role
instead, so they depend on the few calls they make, not on the parameter store's weights, pushes and
kept copies. An S3 space (transfer `s3`, faasgd.channels) has the object calls alone: a BlobStore.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class BlobStore(Protocol):
    """Where a stacking job's objects are kept: its store, or an S3 space."""

    def put_blob(self, job_id: str, name: str, data: bytes) -> None:
        """Write object `name` of a job (overwrites one of the same name)."""

    def get_blob(self, job_id: str, name: str) -> bytes | None:
        """Object `name` of a job, or None when there is none."""


@runtime_checkable
class RecordStore(BlobStore, Protocol):
    """A stacking job's store: its records (config, state), its objects, and the server's clock."""

    def put_record(self, job_id: str, name: str, value: dict) -> None:
        """Write JSON record `name` of a job."""

    def add_record(self, job_id: str, name: str, value: dict) -> bool:
        """Create record `name` only if absent (atomically); True if this call created it."""

    def get_record(self, job_id: str, name: str) -> dict | None:
        """Record `name` of a job, or None."""

    def get_records(self, job_id: str, names: list[str]) -> dict[str, dict | None]:
        """Several records of a job in one round trip (None for each one absent)."""

    def server_time(self) -> float:
        """The store server's clock, in seconds since the epoch."""
