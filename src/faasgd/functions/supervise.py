"""Supervision: no job stays running. A worker that went silent is re-invoked from its record, a bounded
number of times without progress; then the job fails, naming the worker.

Every running call of a worker writes its heartbeat (`heartbeat:<w>`, expiring `lease_s` after the last
beat). A worker not final whose heartbeat is gone is lost; so is one launched `start_timeout_s` ago that
never beat (its call was dropped: OpenFaaS CE's queue-worker does not retry a failed delivery). Who
looks, on OpenFaaS CE with nothing but the gateway, the functions and the store:
  * every running worker, at its heartbeat (every SUPERVISE_EVERY_S), looks after the others;
  * every status read (emnist-setup's GET, so `faasgd status/train`, test.sh) looks after all workers,
    which covers the job whose every worker died; beside the read, in a thread (SupervisionBeside: one at
    a time per job, its actions shown by the next read), so a read answers from the store whatever the
    gateway does.
A lost worker is re-invoked through the gateway's async route; a claim record (`supervising:<w>`,
expiring after start_timeout_s) keeps two supervisors from re-invoking it twice, and gives the new call
time to start. Re-invocations are counted per worker (`relaunch:<w>`) and the count starts again when
the worker makes progress (more pushes); past `max_reinvocations` the job fails.
A worker's call that the queue reports ended without the function's answer (its X-Callback-Url, report_url:
a dropped delivery, a replica gone before it answered) is lost at once, not after start_timeout_s.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import urllib.parse
from collections import OrderedDict
from typing import Any, Callable

from faasgd.job import WORKER_ENDED_STATES, ending
from faasgd.config import TrainConfig
from faasgd.errors import FaasgdError
from faasgd.functions.train_request import TrainRequest
from faasgd.store import ParameterStore, keys

log = logging.getLogger("faasgd.supervise")
SUPERVISE_EVERY_S = 5.0  # how often a running worker looks after the others
REPORT_FUNCTION = "emnist-setup"  # the function the queue reports a worker call's end to
REMEMBERED = 1000  # jobs whose last supervision beside the reads is kept for the next read


def watched(w: int) -> tuple[str, str, str, str, str]:
    """The records supervision reads of worker `w`: its progress, heartbeat, relaunch count, claim, and the
    queue's report of a call that ended unanswered."""
    return (keys.progress_name(w), keys.heartbeat_name(w), keys.relaunch_name(w), keys.supervising_name(w),
            keys.undelivered_name(w))


def watch_names(number_of_workers: int) -> list[str]:
    return [name for w in range(number_of_workers) for name in watched(w)]


def supervise(store: ParameterStore, job_id: str, config: TrainConfig, meta: dict[str, Any],
              relaunch: Callable[[TrainRequest], Any], skip: int | None = None,
              now: Callable[[], float] = time.time) -> list[str]:
    """Look after the job's workers (but `skip`, the caller); what was done, one line each."""
    records = store.get_records(job_id, watch_names(config.number_of_workers))
    done = []
    for w in range(config.number_of_workers):
        if w == skip:
            continue
        record, beat, launch, claimed, undelivered = (records[name] for name in watched(w))
        if (record and record.get("state") in WORKER_ENDED_STATES) or beat is not None or claimed is not None:
            continue  # final, alive, or re-invoked moments ago (its new call has start_timeout_s to beat)
        since = (launch or {}).get("at") or meta["created_at"]
        # `since` is on the store's clock: on Memcached truncated to the second, so up to 1 s early
        reported = undelivered is not None and undelivered.get("at", 0) >= since - store.clock_resolution_s
        if record is None and not reported and now() - since < config.start_timeout_s + store.clock_resolution_s:
            continue  # launched, not started yet: its call may still be on its way (unless the queue said not)
        action = _relaunch(store, job_id, config, w, record, launch, relaunch, now)
        if action:
            done.append(action)
            if action.startswith("failed"):
                break
    return done


def _relaunch(store, job_id, config, w, record, launch, relaunch, now) -> str | None:
    pushes = int((record or {}).get("pushes") or 0)
    count = launch["count"] if launch and launch.get("pushes") == pushes else 0  # progress resets the count
    if count >= config.max_reinvocations:
        where = "never started" if record is None else f"last at epoch {record.get('epoch')} after {pushes} pushes"
        error = (f"worker {w} lost {count + 1} time(s) ({where}; re-invoked {count} time(s) without progress); "
                 f"no heartbeat within lease_s={config.lease_s}")
        if launch and launch.get("error"):  # the gateway (its queue) did not take the last re-invocation
            error += f"; the last re-invocation was refused: {launch['error']}"
        ending.write_result(store, job_id, error=error)
        log.warning("job %s: %s", job_id, error)
        return f"failed: {error}"
    claim_s = max(1, math.ceil(config.start_timeout_s))
    if not store.add_record(job_id, keys.supervising_name(w), {"at": now()}, ttl_s=claim_s):
        return None  # another supervisor is on it
    attempt = {"count": count + 1, "pushes": pushes, "at": now()}
    store.put_record(job_id, keys.relaunch_name(w), attempt)
    iteration = int((record or {}).get("epoch") or 0) if config.invocation_mode == "per-iteration" else 0
    try:
        relaunch(TrainRequest(job_id, w, iteration, config.store))
    except FaasgdError as refused:  # kept for the failure's reason; the claim spaces the next try
        store.put_record(job_id, keys.relaunch_name(w), {**attempt, "error": str(refused)[:500]})
        log.warning("job %s: worker %d was lost; its re-invocation was refused: %s", job_id, w, refused)
        return f"worker {w} was lost; its re-invocation ({count + 1} of {config.max_reinvocations}) was refused"
    log.warning("job %s: worker %d was lost; re-invoked it (%d of %d without progress)", job_id, w, count + 1,
                config.max_reinvocations)
    return f"re-invoked worker {w} ({count + 1} of {config.max_reinvocations})"


def report_url(gateway_url: str, request: TrainRequest) -> str:
    """The X-Callback-Url of a worker's call: the queue posts the call's end there (emnist-setup's POST
    ?job_id=J&worker=W&delivery=1), so a call that ended unanswered is acted on at once (note_delivery)."""
    query = urllib.parse.urlencode({"job_id": request.job_id, "worker": request.worker_id, "delivery": 1,
                                    **({"store": request.store} if request.store else {})})
    return f"{gateway_url.rstrip('/')}/function/{REPORT_FUNCTION}?{query}"


def note_delivery(store: ParameterStore, job_id: str, w: int, status: int, call_id: str,
                  now: Callable[[], float] = time.time) -> bool:
    """Keep the queue's report that worker `w`'s call ended with `status`; True when it ended unanswered
    (not 2xx), which makes supervision re-invoke a worker that never started without start_timeout_s."""
    if 200 <= status < 300:
        return False
    store.put_record(job_id, keys.undelivered_name(w), {"at": now(), "status": status, "call_id": call_id[:200]})
    log.warning("job %s: the queue reports worker %d's call %s ended with %d", job_id, w, call_id[:200], status)
    return True


class SupervisionBeside:
    """At most one supervision per job at a time, each in a daemon thread; the last outcome per job."""

    def __init__(self, spawn: Callable[[Callable[[], None]], object] | None = None):
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._last: OrderedDict[str, dict] = OrderedDict()
        self._spawn = spawn or _daemon_thread

    def look_after(self, job_id: str, supervise: Callable[[], list[str]]) -> dict | None:
        """Start `supervise` for `job_id` beside the caller (unless one runs); the last finished run's outcome:
        {"actions": [...], "at": seconds since the epoch, "error": str | None}, None before the first."""
        with self._lock:
            last = self._last.get(job_id)
            if job_id in self._running:
                return last
            self._running.add(job_id)
        self._spawn(lambda: self._run(job_id, supervise))
        return last

    def running(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._running

    def _run(self, job_id: str, supervise: Callable[[], list[str]]) -> None:
        actions, error = [], None
        try:
            actions = supervise()
        except Exception as exc:  # a store or gateway error: the next read tries again
            error = f"{type(exc).__name__}: {exc}"
            log.warning("job %s: supervision stopped: %s", job_id, error)
        with self._lock:
            self._running.discard(job_id)
            self._last[job_id] = {"actions": actions, "at": time.time(), "error": error}
            self._last.move_to_end(job_id)
            while len(self._last) > REMEMBERED:
                self._last.popitem(last=False)


def _daemon_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name="faasgd-supervision", daemon=True)
    thread.start()
    return thread
