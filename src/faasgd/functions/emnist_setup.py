"""emnist-setup: create a job and fan out its workers through the gateway; report a job's status; give its model.

POST ?job_id=J&worker=W&delivery=1: the queue's report of a worker call's end (delivery_report).
POST ?job_id=J[&store=NAME]&cancel=1: cancel a running job (cancel_request; 409 naming its state once it has ended).
POST ?job_id=J[&store=NAME]&restore=1 with J's model file as the body: put its parameters back in a store that lost
the job, for a job resuming it (restore_request).
GET ?job_id=J[&store=NAME][&events=1][&profile=1][&wait=S]: the status (JSON; profile=1 adds each worker's
resource series, `profiles`, profile/worker_profile.py; wait=S, up to MAX_WAIT_S seconds: a running job's
status is answered when it ends or S seconds have passed, whichever comes first; at most MAX_WAITING_READS wait at
once, others answer at once). GET ?job_id=J[&store=NAME]&model=npz: the job's
model as an npz file (application/octet-stream; format in faasgd.job.model_file), after the same checks of the query.
"""

from __future__ import annotations

import threading
import urllib.parse
from typing import Any, Mapping

from faasgd import job, tracing
from faasgd.channels import configured_dynamodb, configured_space
from faasgd.config import config_from_record, load_request
from faasgd.errors import ConfigError
from faasgd.functions import admission, orchestrate, replica_cache, supervise
from faasgd.functions.supervise import SupervisionBeside
from faasgd.functions.emnist_train import relaunch_through_gateway
from faasgd.functions.call_limits import call_clock
from faasgd.functions.settings import FunctionEnv
from faasgd.job import model_file
from faasgd.job.status import MAX_WAIT_S
from faasgd.worker.budget import UNLIMITED, CallBudget
from faasgd.store import parse_store_url
from faasgd.store import keys
from faasgd.store.keys import check_job_id

STATUS_QUERY_KEYS = ("job_id", "store", "events", "model", "profile", "wait")
# Status reads that may wait at once in this replica: half of the template's 4 waitress threads, so watchers never
# hold the ones new jobs and the queue's delivery reports come in on; a read beyond them answers at once (its
# client then sleeps the rest of its period: polling.poll_until's read_waits)
MAX_WAITING_READS = 2
WAITING_READS = threading.BoundedSemaphore(MAX_WAITING_READS)
MODEL_FORMATS = ("npz",)  # what ?model= may ask for
BESIDE = SupervisionBeside()  # this replica's supervision of the jobs it is asked about, beside the reads


@tracing.traced("setup")
def start_job(body: Any, env: Mapping[str, str], callback_url: str | None = None,
              budget: CallBudget = UNLIMITED) -> tuple[int, dict]:
    """Validate, create the job, then fan out (202) or, in single mode, train here (200).

    Nothing is written before the request, the store, the data and the job's size have all checked out.
    """
    clock = call_clock(env)  # the call's billed time starts at its entry
    settings = FunctionEnv.read(env)
    config = load_request(env, body)  # the one parse: environment defaults, then the body
    config = config.model_copy(update={"store_url": settings.store_url_of(config.store),
                                        "local_store_url": settings.local_store_url})
    check_callback(callback_url)
    if config.channel == "s3":  # the rounds' S3 space is the function's own: refused here when it has none,
        configured_space(env).ping()  # 503 naming it when it does not answer; nothing is written before either
    if config.channel == "dynamodb":  # the same for its two DynamoDB tables
        configured_dynamodb(env).ping()
    needs = admission.check_job(config, env, parse_store_url(config.store_url).scheme)
    store = replica_cache.store_for(config.store_url)
    job_id = orchestrate.create_job(store, config)
    tracing.annotate(job_id=job_id, workers=config.number_of_workers, mode=config.invocation_mode)
    query = {"job_id": job_id, **({"store": config.store} if config.store else {})}
    answer = {"job_id": job_id, "number_of_workers": config.number_of_workers,
              "invocation_mode": config.invocation_mode, "dataset": config.dataset, "store": config.store or "default",
              "store_url": store.url, "needs": needs, "status_query": query,
              "status_url": "/function/emnist-setup?" + urllib.parse.urlencode(query)}
    if config.invocation_mode == "single":
        final = orchestrate.run_single(store, config, job_id, budget, relaunch_through_gateway(settings), clock)
        return (202 if final.get("handed_off") else 200), {**answer, "result": final}
    gateway = replica_cache.gateway_for(settings.gateway_url)

    def launch(request: orchestrate.TrainRequest) -> str:  # without a callback of the job's, the queue reports
        report = callback_url or supervise.report_url(settings.gateway_url, request)  # to supervision
        return gateway.invoke_async(settings.train_function, request.body(), report)

    call_ids = orchestrate.launch_workers(store, config, job_id, launch, clock, orchestrate.FAN_OUT_IN_FLIGHT)
    return 202, {**answer, "call_ids": call_ids}


def delivery_report(query: Mapping[str, str], headers: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict]:
    """POST ?job_id=J&worker=W&delivery=1[&store=NAME]: the queue's callback at the end of a worker's call
    (supervise.report_url). A call that ended unanswered (X-Function-Status not 2xx) is kept, and the job's
    supervision starts beside this answer, so a worker whose call never ran is re-invoked now."""
    job_id, worker = query.get("job_id") or "", query.get("worker") or ""
    check_job_id(job_id)
    if not worker.isdigit() or len(worker) > 6:
        raise ConfigError("worker", f"must be a worker number, got {worker[:40]!r}")
    status = headers.get("X-Function-Status") or ""
    if not status.isdigit() or len(status) != 3:
        raise ConfigError("X-Function-Status", f"must be an HTTP status, got {status[:40]!r}")
    settings = FunctionEnv.read(env)
    store = replica_cache.store_for(settings.store_url_of(query.get("store", "")))
    current = job.read_status(store, job_id)
    if current["state"] != "running" or int(worker) >= len(current["workers"]):
        return 200, {"job_id": job_id, "noted": False}
    noted = supervise.note_delivery(store, job_id, int(worker), int(status), headers.get("X-Call-Id") or "")
    if noted:
        config, meta = config_from_record(current["config"]), {"created_at": current["created_at"]}
        relaunch = relaunch_through_gateway(settings, quiet=False, report=True)
        BESIDE.look_after(job_id, lambda: supervise.supervise(store, job_id, config, meta, relaunch))
    return 200, {"job_id": job_id, "noted": noted}


CANCEL_QUERY_KEYS = ("job_id", "store", "cancel")


def cancel_request(query: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict]:
    """POST ?job_id=J[&store=NAME]&cancel=1: cancel the job (faasgd.job.cancel_job) and answer its status, its
    `cancelled` record set; its workers stop at their next check and the last one writes the result `cancelled`
    (watch it with GET ?job_id=J&wait=S). 404 for no such job, 409 naming the state of one that has ended; nothing
    is written for either, nor for a query that does not check out."""
    job_id = query.get("job_id") or ""
    unknown = sorted(set(query) - set(CANCEL_QUERY_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown query parameter (allowed: {', '.join(CANCEL_QUERY_KEYS)})")
    if query.get("cancel") not in ("1", "true"):
        raise ConfigError("cancel", f"must be 1 or true, got {str(query.get('cancel'))[:40]!r}")
    check_job_id(job_id)
    store = replica_cache.store_for(FunctionEnv.read(env).store_url_of(query.get("store", "")))
    job.cancel_job(store, job_id, by="http")
    return 200, job.read_status(store, job_id)


RESTORE_QUERY_KEYS = ("job_id", "store", "restore")


def restore_request(query: Mapping[str, str], body: bytes, env: Mapping[str, str]) -> tuple[int, dict]:
    """POST ?job_id=J[&store=NAME]&restore=1, the body J's model file (`faasgd model J`, GET ?model=npz): its
    parameters put back in the store under J (faasgd.job.records.restore_job), so a job with resume_from J starts
    from them and counts on from what the file says J had trained. 201 with the `restored` record (200 with the
    first one's, `again` true, when J was restored already: nothing is written again); 400 naming the
    field for a query or file that does not check out, or a file of another job; nothing is written then, nor when
    J is still in the store (resume it from there)."""
    job_id = query.get("job_id") or ""
    unknown = sorted(set(query) - set(RESTORE_QUERY_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown query parameter (allowed: {', '.join(RESTORE_QUERY_KEYS)})")
    if query.get("restore") not in ("1", "true"):
        raise ConfigError("restore", f"must be 1 or true, got {str(query.get('restore'))[:40]!r}")
    check_job_id(job_id)
    if not body:
        raise ConfigError("body", "the job's model file (npz: faasgd model JOB -o FILE) is the body; none was sent")
    found = model_file.from_npz(bytes(body))
    if found.job_id != job_id:
        raise ConfigError("job_id", f"the model file is job {found.job_id!r}'s, not {job_id!r}'s")
    keep_s = (found.config or {}).get("keep_s") or load_request(env, {}).keep_s
    store = replica_cache.store_for(FunctionEnv.read(env).store_url_of(query.get("store", "")))
    trained = found.trained or {"samples": 0, "epochs": 0.0, "wall_s": 0.0}  # a file without it: counted from 0
    record = job.restore_job(store, job_id, found.params, list(found.sizes), trained, keep_s)
    return (200 if record.get("again") else 201), {"job_id": job_id, "restored": record}


def check_callback(url: str | None) -> None:
    """An X-Callback-Url must be an http(s) URL with a host: refused before any work, never after."""
    if url is None:
        return
    parts = urllib.parse.urlsplit(url) if url.isprintable() and len(url) <= 2048 else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        raise ConfigError("X-Callback-Url", f"must be an http or https URL with a host, got {url[:200]!r}")


def status_wait(query: Mapping[str, str]) -> float:
    """The seconds a status read's `wait` asks for (0 when not given); ConfigError naming `wait` unless a number
    in [0, MAX_WAIT_S], and never with `model` (a model file is answered at once or not at all)."""
    given = query.get("wait")
    if given is None:
        return 0.0
    try:
        seconds = float(given)
    except ValueError:
        seconds = float("nan")
    if not 0.0 <= seconds <= MAX_WAIT_S:  # NaN and inf too
        raise ConfigError("wait", f"must be a number of seconds in [0, {MAX_WAIT_S:g}], got {str(given)[:40]!r}")
    if "model" in query:
        raise ConfigError("wait", "is for status reads, not with model")
    return seconds


def job_status(query: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict | bytes]:
    """GET ?job_id=J[&store=NAME][&wait=S]: state (running | done | failed), per-worker progress, the result when
    finished (a running job's after up to S seconds, at once when it ends meanwhile: status_wait); with &model=npz the job's model file instead (bytes; NoModel, a 409, while it has none)."""
    job_id = query.get("job_id")
    if not job_id:
        raise ConfigError("job_id", "required query parameter, e.g. ?job_id=j0123456789abcde")
    unknown = sorted(set(query) - set(STATUS_QUERY_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown query parameter (allowed: {', '.join(STATUS_QUERY_KEYS)})")
    for key in STATUS_QUERY_KEYS:  # a multi-dict (the template's event.query): which value counts would be a guess
        if len(getattr(query, "getlist", lambda k: [query.get(k)])(key)) > 1:
            raise ConfigError(key, "given more than once in the query")
    if "model" in query and (query.get("model") not in MODEL_FORMATS or "events" in query or "profile" in query):
        raise ConfigError("model", f"must be one of {', '.join(MODEL_FORMATS)}, without events or profile, "
                                   f"got {str(query.get('model'))[:40]!r}")
    wait_s = status_wait(query)
    settings = FunctionEnv.read(env)
    store = replica_cache.store_for(settings.store_url_of(query.get("store", "")))
    if "model" in query:
        check_job_id(job_id)
        return 200, model_file.to_npz(model_file.read_model(store, job_id))
    status = job.read_status(store, job_id)
    if status["state"] == "running":  # whoever watches a job also looks after its workers, beside the read
        config, meta = config_from_record(status["config"]), {"created_at": status["created_at"]}
        relaunch = relaunch_through_gateway(settings, quiet=False, report=True)
        last = BESIDE.look_after(job_id, lambda: supervise.supervise(store, job_id, config, meta, relaunch))
        if wait_s > 0 and WAITING_READS.acquire(blocking=False):  # beyond the cap a read answers at once
            try:
                job.wait_for_end(store, job_id, wait_s)
            finally:
                WAITING_READS.release()
            status = job.read_status(store, job_id)  # as of now, whether it ended or the seconds ran out
        if status["state"] == "running":
            status["supervision"] = last["actions"] if last else []  # what the last finished look did
    if query.get("events") in ("1", "true"):
        status["events"] = store.events(job_id)  # created, fanned-out, one per worker epoch, result
    if query.get("profile") in ("1", "true"):
        names = [keys.profile_name(i) for i in range(len(status.get("workers") or []))]
        found = store.get_records(job_id, names) if names else {}
        status["profiles"] = [found.get(name) for name in names]
    return 200, status
