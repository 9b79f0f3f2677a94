"""What one emnist-train invocation is asked to do: its JSON body, parsed and checked once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from faasgd.checks import whole_number
from faasgd.config import LOCATION_KEYS, read_setting
from faasgd.errors import ConfigError

REQUEST_KEYS = ("job_id", "worker_id", "iteration", "store")


@dataclass(frozen=True)
class TrainRequest:
    """What one emnist-train invocation is asked to do (its JSON body)."""

    job_id: str  # the job created by emnist-setup
    worker_id: int  # which shard, 0 .. number_of_workers - 1
    iteration: int = 0  # per-iteration mode: which epoch this invocation trains (0 in loop mode)
    store: str = ""  # the configured store (by name) the job lives in; "": the function's own store_url

    def body(self) -> dict[str, Any]:
        out = {"job_id": self.job_id, "worker_id": self.worker_id, "iteration": self.iteration}
        return {**out, "store": self.store} if self.store else out

    def next(self, iteration: int) -> "TrainRequest":
        return replace(self, iteration=iteration)

    @classmethod
    def parse(cls, body: Any) -> "TrainRequest":
        """Check the body names a job and a worker; unknown keys and bad values name the field."""
        if not isinstance(body, Mapping):
            raise ConfigError("body", f"must be a JSON object with job_id and worker_id, got {type(body).__name__}")
        for key in body:
            if key in LOCATION_KEYS:
                raise ConfigError(key, "a store's location comes from the function's configuration, never from a "
                                       "request; name one of its stores with `store`")
            if key not in REQUEST_KEYS:
                raise ConfigError(str(key), f"unknown key (allowed: {', '.join(REQUEST_KEYS)})")
        if not isinstance(body.get("job_id"), str) or not body["job_id"]:
            raise ConfigError("job_id", f"required string, got {body.get('job_id')!r}")
        numbers = {}
        for key, default in (("worker_id", None), ("iteration", 0)):
            numbers[key] = whole_number(body.get(key, default), key, low=0)
        store = read_setting({"store": body.get("store") or ""}, "store") if body.get("store") is not None else ""
        return cls(body["job_id"], numbers["worker_id"], numbers["iteration"], store)
