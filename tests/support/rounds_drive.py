"""Driving synchronous rounds (faasgd.lambdaml.rounds) with one thread per worker, and their oracles.

`in_threads` runs `work(worker_id)` for every worker at once and returns each one's value or exception;
`exchanges` opens one store (one client) per worker, as separate function replicas would;
`expected_merge` is the documented merge, computed here independently of the exchange;
`KillOnce` wraps a blob space to kill its worker once, mid-round.
"""

from __future__ import annotations

import threading
import uuid

import numpy as np

from faasgd.lambdaml.rounds import Exchange, ExchangeConfig
from faasgd.store import open_store

FAST = dict(poll_s=0.0005, poll_max_s=0.005, round_timeout_s=10.0)  # threads meet within milliseconds


def new_job() -> str:
    return "r-" + uuid.uuid4().hex[:12]


def memory_url() -> str:
    return f"memory://rounds{uuid.uuid4().hex[:10]}"


def in_threads(workers: int, work, timeout_s: float = 20.0) -> list:
    """Run work(w) for w in 0..workers-1 concurrently; each slot holds the value returned or the exception raised."""
    results: list = [None] * workers

    def run(w: int) -> None:
        try:
            results[w] = work(w)
        except BaseException as e:  # noqa: BLE001 - handed to the test as a value
            results[w] = e

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    assert not any(t.is_alive() for t in threads), "a worker hung past the test's timeout"
    return results


def values(results: list) -> list:
    """The results, re-raising the first exception among them."""
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def exchanges(url: str, job_id: str, workers: int, pattern: str, **config) -> list[Exchange]:
    cfg = ExchangeConfig(pattern=pattern, workers=workers, **{**FAST, **config})
    return [Exchange(open_store(url, timeout_s=5.0), job_id, w, cfg) for w in range(workers)]


def vectors(workers: int, length: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(length).astype(np.float32) * (w + 1) for w in range(workers)]


def all_reduce(url: str, pattern: str, vecs: list[np.ndarray], round_no: int = 0, job_id: str | None = None,
               **config) -> list:
    """Every worker's (merged, stats) for one round of `vecs`, one thread per worker."""
    ex = exchanges(url, job_id or new_job(), len(vecs), pattern, **config)
    return values(in_threads(len(vecs), lambda w: ex[w].all_reduce(round_no, vecs[w])))


def expected_merge(vecs: list[np.ndarray], op: str = "mean") -> np.ndarray:
    """The documented merge: float64 sum in worker order, divided by N for mean, rounded once to float32."""
    acc = np.zeros(len(vecs[0]), dtype=np.float64)
    for v in vecs:
        acc = acc + v.astype(np.float64)
    return (acc / len(vecs) if op == "mean" else acc).astype(np.float32)


class Killed(Exception):
    pass


class KillOnce:
    """A blob space that raises Killed at the first call matching `when(op, name)`, after doing a put."""

    def __init__(self, space, when):
        self.space, self.when, self.fired = space, when, False

    def put_blob(self, job_id, name, data):
        self.space.put_blob(job_id, name, data)
        self._maybe("put", name)

    def get_blob(self, job_id, name):
        self._maybe("get", name)
        return self.space.get_blob(job_id, name)

    def _maybe(self, op, name):
        if not self.fired and self.when(op, name):
            self.fired = True
            raise Killed(f"{op} {name}")
