"""What one emnist-train invocation is asked to do: its JSON body, parsed and checked once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from faasgd.errors import ConfigError

REQUEST_KEYS = ("job_id", "worker_id", "iteration", "store_url")


@dataclass(frozen=True)
class TrainRequest:
    """What one emnist-train invocation is asked to do (its JSON body)."""

    job_id: str  # the job created by emnist-setup
    worker_id: int  # which shard, 0 .. number_of_workers - 1
    iteration: int = 0  # per-iteration mode: which epoch this invocation trains (0 in loop mode)
    store_url: str | None = None  # where the job lives, when not in the function's own store

    def body(self) -> dict[str, Any]:
        out = {"job_id": self.job_id, "worker_id": self.worker_id, "iteration": self.iteration}
        return out if self.store_url is None else {**out, "store_url": self.store_url}

    def next(self, iteration: int) -> "TrainRequest":
        return replace(self, iteration=iteration)

    @classmethod
    def parse(cls, body: Any) -> "TrainRequest":
        """Check the body names a job and a worker; unknown keys and bad values name the field."""
        if not isinstance(body, Mapping):
            raise ConfigError("body", f"must be a JSON object with job_id and worker_id, got {type(body).__name__}")
        for key in body:
            if key not in REQUEST_KEYS:
                raise ConfigError(str(key), f"unknown key (allowed: {', '.join(REQUEST_KEYS)})")
        if not isinstance(body.get("job_id"), str) or not body["job_id"]:
            raise ConfigError("job_id", f"required string, got {body.get('job_id')!r}")
        numbers = {}
        for key, default in (("worker_id", None), ("iteration", 0)):
            value = body.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(key, f"must be an integer >= 0, got {value!r}")
            numbers[key] = value
        store_url = body.get("store_url") or None
        if store_url is not None and not isinstance(store_url, str):
            raise ConfigError("store_url", f"must be a store URL string, got {store_url!r}")
        return cls(body["job_id"], numbers["worker_id"], numbers["iteration"], store_url)
