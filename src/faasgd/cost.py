"""What a job is billed for, and what that costs: usage from the calls' own records, money from a price table.

    figures = usage(progress.values(), extra_calls)      # requests, GB-seconds, cold starts, ...
    money = job_cost(figures, wall_s, Prices())          # FaaS, store host, total, in US dollars

Each worker record carries its calls' billing (worker/progress.py): `invocations`, `billed_s` (each call from
its handler's entry to its end, on time.monotonic), `billed_gb_s` (duration x memory GB per call),
`memory_mb` (the function's memory limit the calls were billed at) and `cold_starts` (calls that were the
first a replica process served). Calls that trained no worker (duplicate deliveries, emnist-setup's call)
come as extra call entries {"billed_s", "memory_mb", "cold", "duplicate"}. A GB is 1024 MB, as FaaS
platforms bill a function's memory setting.

Money, as LambdaML prices a run: FaaS = GB-seconds x price per GB-second + requests x price per request;
the store = its host's hourly price x the job's wall time. A figure that cannot be known is None, never 0:
GB-seconds when a billed call has no memory limit (its function sets none), every cost that needs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping

from faasgd.errors import ConfigError

USAGE = ("requests", "billed_s", "billed_gb_s", "memory_mb", "cold_starts", "duplicate_calls")
COST = ("cost_faas_usd", "cost_store_usd", "cost_usd")
MEASURES = USAGE + COST
MB_PER_GB = 1024.0  # a function's memory setting in MB / 1024: AWS Lambda bills 512 MB as 0.5 GB


@dataclass(frozen=True)
class Prices:
    """US dollars per unit billed. Defaults: AWS Lambda x86 in us-east-1, first tier, and the smallest
    ElastiCache node that holds a job's store; looked up 2026-11-26 (docs/reference/cost.md)."""

    # https://aws.amazon.com/lambda/pricing/ (and docs.aws.amazon.com/whitepapers/latest/how-aws-pricing-works/
    # lambda.html): x86, first 6 billion GB-seconds a month, $0.0000166667 per GB-second
    gb_s: float = 0.0000166667
    # the same pages: $0.20 per 1 million requests
    request: float = 0.20 / 1_000_000
    # https://aws.amazon.com/elasticache/pricing/ : cache.t3.micro on demand (2 vCPU, 0.5 GiB), Redis or
    # Memcached, us-east-1, $0.017 per hour (seen on a third-party copy of AWS's table, not on AWS's own page)
    store_hour: float = 0.017

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None, where: str = "prices") -> "Prices":
        """Prices from a mapping of some of the fields (the rest default); errors name `where.field`."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise ConfigError(where, f"must be a mapping of prices ({', '.join(PRICE_KEYS)}), got {values!r}")
        for key in values:
            if key not in PRICE_KEYS:
                raise ConfigError(f"{where}.{key}", f"unknown price (allowed: {', '.join(PRICE_KEYS)})")
        return cls(**{key: check_price(f"{where}.{key}", value) for key, value in values.items()})

    @classmethod
    def from_assignments(cls, items: Iterable[str], flag: str = "--price") -> "Prices":
        """Prices from KEY=VALUE texts (a command's repeated flag); errors name the flag and the key."""
        values: dict[str, str] = {}
        for item in items:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise ConfigError(flag, f"must be KEY=VALUE with KEY one of {', '.join(PRICE_KEYS)}, got {item!r}")
            values[key.strip()] = value.strip()
        return cls.parse(values, where=flag)

    def to_dict(self) -> dict[str, float]:
        return {key: getattr(self, key) for key in PRICE_KEYS}

    def describe(self) -> str:
        """One line: the prices as a reader checks them against a bill."""
        return (f"${self.gb_s:.10g} per GB-second, ${self.request * 1e6:.4g} per million requests, "
                f"${self.store_hour:.4g} per hour of the store's host")


PRICE_KEYS = tuple(f.name for f in fields(Prices))


def check_price(field: str, value: Any) -> float:
    """A price: a finite number >= 0 (a number or its text)."""
    if isinstance(value, bool):
        raise ConfigError(field, f"must be a price in US dollars (a number >= 0), got {value!r}")
    try:
        price = float(value)
    except (TypeError, ValueError):
        raise ConfigError(field, f"must be a price in US dollars (a number >= 0), got {value!r}") from None
    if not math.isfinite(price) or price < 0:
        raise ConfigError(field, f"must be a price in US dollars (a number >= 0), got {value!r}")
    return price


def gb_seconds(billed_s: float, memory_mb: float | None) -> float | None:
    """A call's GB-seconds: its duration x its memory limit in GB; None when the limit is unknown."""
    return None if memory_mb is None else float(billed_s) * float(memory_mb) / MB_PER_GB


def usage(records: Iterable[dict | None], extra_calls: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Every USAGE key of a job from its worker records and the calls that trained no worker.

    requests: the worker records' invocations plus the extra calls; billed_s, billed_gb_s, cold_starts: their
    sums; memory_mb: the largest memory limit any call was billed at; duplicate_calls: extra calls marked so.
    billed_gb_s (and memory_mb) is None when a call that billed time had no memory limit."""
    records = [r for r in records if r]
    calls = list(extra_calls)
    memories = [r.get("memory_mb") for r in records if int(r.get("invocations") or 0) or r.get("billed_s")]
    memories += [c.get("memory_mb") for c in calls]
    known = [float(m) for m in memories if m is not None]
    extra_gb_s = [gb_seconds(c.get("billed_s") or 0.0, c.get("memory_mb")) for c in calls]
    unknown = len(known) < len(memories)
    return {
        "requests": sum(int(r.get("invocations") or 0) for r in records) + len(calls),
        "billed_s": sum(float(r.get("billed_s") or 0.0) for r in records) + sum(float(c.get("billed_s") or 0.0)
                                                                                for c in calls),
        "billed_gb_s": None if unknown else sum(float(r.get("billed_gb_s") or 0.0) for r in records)
        + sum(g or 0.0 for g in extra_gb_s),
        "memory_mb": max(known) if known and not unknown else None,
        "cold_starts": sum(int(r.get("cold_starts") or 0) for r in records) + sum(bool(c.get("cold")) for c in calls),
        "duplicate_calls": sum(bool(c.get("duplicate")) for c in calls),
    }


def job_cost(figures: Mapping[str, Any], wall_s: float | None, prices: Prices) -> dict[str, float | None]:
    """Every COST key: FaaS = GB-seconds x gb_s + requests x request; store = store_hour x wall_s / 3600;
    the total. A part that cannot be priced (no GB-seconds, no wall time) is None, and so is the total."""
    gb_s, requests = figures.get("billed_gb_s"), figures.get("requests")
    faas = None if gb_s is None or requests is None else gb_s * prices.gb_s + int(requests) * prices.request
    store = None if wall_s is None else prices.store_hour * float(wall_s) / 3600.0
    return {"cost_faas_usd": faas, "cost_store_usd": store,
            "cost_usd": None if faas is None or store is None else faas + store}


def job_figures(records: Iterable[dict | None], extra_calls: Iterable[Mapping[str, Any]] = (),
                wall_s: float | None = None, prices: Prices | None = None) -> dict[str, Any]:
    """Every key of MEASURES for a job: its usage, priced (default prices unless given)."""
    figures = usage(records, extra_calls)
    return {**figures, **job_cost(figures, wall_s, prices or Prices())}


def reprice(run: Mapping[str, Any], prices: Prices) -> dict[str, float | None]:
    """The COST keys of a recorded run (its usage keys and wall_s) at other prices."""
    return job_cost(run, run.get("wall_s"), prices)
