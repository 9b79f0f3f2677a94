"""Training jobs from Python: start one, follow it, read its result and its model.

    from faasgd import api
    job = api.train(dataset="synthetic", train_samples=4000, hidden_sizes=[32])   # `faasgd train`, not waiting
    job.wait()                        # until it is done or failed (`faasgd status J --watch`)
    job.cancel()                      # stop it: its workers stop at their next check (`faasgd cancel J`)
    job.result()["final_test_accuracy"]
    again = api.job(job.job_id)       # an existing job, through the gateway (store= a configured store's name)

A job is read through the gateway (emnist-setup answers its status and model file) or, given `store_url=`,
straight from the store. A job id the store does not hold raises faasgd.errors.JobNotFound saying where it
looked and how to name another store (faasgd.api.hints).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Callable

from faasgd.job import cancel_job, model_file, result, status
from faasgd.api import hints
from faasgd.api.local_runtime import DEFAULT_DIR, connect
from faasgd.local import control, optional_stores
from faasgd.config import LOCATION_KEYS, TrainConfig, load_request, read_setting
from faasgd.errors import ConfigError, FaasgdError
from faasgd.openfaas import POLL_S, SETUP_FUNCTION, FunctionError, GatewayClient, json_answer, wait_for_job
from faasgd.store import ParameterStore, open_store
from faasgd.store.keys import check_job_id

WAIT_S = 3600.0


class Job:
    """One training job and where its status and model are read from (a gateway, or a store).

    Build one with `train`, `submit` or `job`; `info` holds emnist-setup's answer when this session started
    the job (workers, dataset, mode, store, store_url)."""

    def __init__(self, job_id: str, read_status: Callable[[], dict], read_model: Callable[[], bytes],
                 not_found: Callable[[str], FaasgdError], info: Mapping[str, Any] | None = None,
                 read_status_waiting: Callable[[float], dict] | None = None,
                 request_cancel: Callable[[], dict] | None = None,
                 read_events: Callable[[int], list[dict]] | None = None):
        self.job_id, self.info = job_id, dict(info or {})
        self._request_cancel = request_cancel
        self._read_events = read_events  # the job's events from an index on (the trackers' feed)
        self._read_status, self._read_model, self._not_found = read_status, read_model, not_found
        self._read_status_waiting = read_status_waiting  # a read answered when the job ends or after the seconds

    def __repr__(self) -> str:
        return f"Job({self.job_id!r})"

    def status(self) -> dict:
        """The job's status once: state (running | done | failed), per-worker progress, its result when ended.

            >>> job.status()["state"]            # doctest: +SKIP
            'running'
        """
        return self._named(self._read_status, "status")

    def wait(self, timeout_s: float = WAIT_S, on_status: Callable[[dict], None] | None = None,
             poll_s: float = POLL_S) -> dict:
        """Read the status until the job is no longer running or `timeout_s` has passed; the last status
        (still "running" at the deadline: the caller decides what a timeout means). `on_status` sees each read.

            >>> job.wait(timeout_s=600)["state"]  # doctest: +SKIP
            'done'
        """
        if not timeout_s > 0:  # NaN too
            raise ConfigError("timeout_s", f"must be a number of seconds > 0, got {timeout_s!r}")
        if self._read_status_waiting is None:
            return wait_for_job(self.status, timeout_s, on_status=on_status, poll_s=poll_s)
        # through the gateway each read waits up to poll_s for the job's end (emnist-setup's `wait`), so the wait
        # returns as the job ends instead of up to poll_s later; never past this wait's own deadline
        deadline = time.monotonic() + timeout_s
        seconds = min(poll_s, status.MAX_WAIT_S)

        def read() -> dict:
            if self._read_status_waiting is None:  # an emnist-setup that refused `wait`: plain reads from then on
                return self.status()
            try:
                return self._named(lambda: self._read_status_waiting(
                    max(0.0, min(seconds, deadline - time.monotonic()))), "status")
            except FunctionError as error:
                if error.http_status != 400 or error.field != "wait":
                    raise
                self._read_status_waiting = None  # an emnist-setup older than `wait` (its unknown query parameter)
                return self.status()

        return wait_for_job(read, timeout_s, on_status=on_status, poll_s=poll_s, read_waits=True)

    def result(self, timeout_s: float = WAIT_S) -> dict:
        """The job's result record, waiting up to `timeout_s` for it to end; a failed record saying so when it
        has not ended by then.

            >>> job.result()["final_test_accuracy"]   # doctest: +SKIP
            0.8731
        """
        final = self.wait(timeout_s).get("result")
        return final or result.missing(self.job_id, f"no result after {timeout_s:g} s")

    def cancel(self, timeout_s: float = 0.0) -> dict:
        """Cancel the job: its workers stop at their next check (within a second at the defaults), no call starts
        training after it, and the result is `cancelled`, keeping what was measured and the last parameters as its
        model. With `timeout_s` > 0, wait up to that long for the job to end. The status (its `cancelled` record
        set); JobEnded (naming the state) when it has ended already, nothing changed then.

            >>> job.cancel(timeout_s=30)["state"]   # doctest: +SKIP
            'cancelled'
        """
        if not timeout_s >= 0:  # NaN too
            raise ConfigError("timeout_s", f"must be a number of seconds >= 0, got {timeout_s!r}")
        if self._request_cancel is None:
            raise FaasgdError(f"job_id: job {self.job_id!r} was not read from a gateway or a store: cannot cancel it")
        current = self._named(self._request_cancel, "cancel")
        return self.wait(timeout_s) if timeout_s > 0 else current

    def events(self, start: int = 0) -> list[dict]:
        """The job's events from the `start`-th on (created, fanned-out, epoch ends, checks, result), in order.

            >>> [e["event"] for e in job.events()][:2]   # doctest: +SKIP
            ['created', 'call']
        """
        if self._read_events is None:
            return []
        return self._named(lambda: self._read_events(start), "status")

    def model_bytes(self) -> bytes:
        """The job's model as npz bytes: the parameters that met the target, else its final ones.

            >>> Path("model.npz").write_bytes(job.model_bytes())   # doctest: +SKIP
        """
        return self._named(self._read_model, "model")

    def _named(self, read: Callable[[], Any], verb: str) -> Any:
        try:
            return read()
        except FaasgdError as error:
            if hints.is_not_found(error):
                raise self._not_found(verb) from None
            raise


def through_gateway(client: GatewayClient, query: Mapping[str, str], info: Mapping[str, Any] | None = None) -> Job:
    """The job `query` names (job_id, and store when not the function's default) as emnist-setup reads it.

        >>> through_gateway(api.connect(), {"job_id": "j0123456789abcdef", "store": "redis"}).status()  # doctest: +SKIP
    """
    query, store = dict(query), query.get("store")

    def not_found(verb: str) -> FaasgdError:
        return hints.through_gateway(query["job_id"], store, hints.configured_stores(client), verb)

    def waiting(seconds: float) -> dict:  # the answer may come `seconds` late: the client's timeout leaves room
        return client.job_status({**query, "wait": f"{seconds:.3f}"}, timeout_s=max(client.timeout_s, seconds + 10))

    def events(start: int) -> list[dict]:  # emnist-setup answers them all with the status (`events=1`)
        return (client.job_status({**query, "events": "1"}).get("events") or [])[start:]

    return Job(query["job_id"], lambda: client.job_status(query), lambda: client.model_file(query), not_found, info,
               read_status_waiting=waiting, request_cancel=lambda: client.cancel_job(query), read_events=events)


def in_store(store: ParameterStore, job_id: str) -> Job:
    """The job as its records in `store` say, read directly (no gateway).

        >>> in_store(open_store("redis://127.0.0.1:6379/0"), "j0123456789abcdef").wait()  # doctest: +SKIP
    """
    def request_cancel() -> dict:
        cancel_job(store, job_id, by="api")
        return status.read_status(store, job_id)

    return Job(job_id, lambda: status.read_status(store, job_id),
               lambda: model_file.to_npz(model_file.read_model(store, job_id)),
               lambda verb: hints.in_store(job_id, store.url, verb), request_cancel=request_cancel,
               read_events=lambda start: store.events(job_id, start))


def job(job_id: str, *, store: str | None = None, store_url: str | None = None, gateway: str | None = None,
        directory: str = DEFAULT_DIR) -> Job:
    """An existing job: through the gateway (`store`: the function's configured store holding it, by name), or
    with `store_url` straight from that store.

        >>> api.job("j0123456789abcdef", store="memcached").status()["state"]   # doctest: +SKIP
        'done'
    """
    check_job_id(job_id)
    if store_url is not None:
        if store:
            raise ConfigError("store", "names a function's configured store; reading a store directly give only "
                                       "store_url (the CLI's --direct --store-url)")
        return in_store(open_store(read_setting({"store_url": store_url}, "store_url")), job_id)
    query = {"job_id": job_id}
    if store:
        query["store"] = read_setting({"store": store}, "store")  # a name, never a location
    return through_gateway(connect(gateway, directory), query)


def request_body(config: TrainConfig | Mapping[str, Any] | None = None, **keys: Any) -> dict:
    """The config keys of a job's request: a mapping or a TrainConfig, then `keys` over it (store locations
    left out: a function's stores are its own configuration; name one with `store`).

        >>> request_body({"dataset": "synthetic"}, number_of_workers=2)
        {'dataset': 'synthetic', 'number_of_workers': 2}
    """
    if config is None:
        base: dict = {}
    elif isinstance(config, TrainConfig):
        base = {k: v for k, v in config.to_dict().items() if k not in LOCATION_KEYS}
    elif isinstance(config, Mapping):
        base = dict(config)
    else:
        raise ConfigError("config", f"must be a TrainConfig or a mapping of config keys, got {type(config).__name__}")
    return {**base, **keys}


def submit(client: GatewayClient, body: Mapping[str, Any], directory: str = DEFAULT_DIR) -> Job:
    """POST a checked request body to emnist-setup through `client`; the job it started. When `client` is the local
    runtime of `directory` and emnist-setup waits there for its image, the error says what is missing and the next
    commands (faasgd.api.hints.not_deployed).

        >>> job = submit(api.connect(gateway="http://127.0.0.1:8080"), {"dataset": "synthetic"})  # doctest: +SKIP
    """
    try:
        answer = json_answer(client.invoke(SETUP_FUNCTION, dict(body)), SETUP_FUNCTION)
    except FunctionError as error:
        raise hints.not_deployed(error, client, SETUP_FUNCTION, directory) or error
    return through_gateway(client, answer["status_query"], answer)


def train(config: TrainConfig | Mapping[str, Any] | None = None, /, *, gateway: str | None = None,
          directory: str = DEFAULT_DIR, **keys: Any) -> Job:
    """Start a training job through the gateway (`faasgd train` without waiting); its Job.

    The config is a mapping or a TrainConfig and/or config keys as keywords (docs/reference/configuration.md;
    `store="memcached"` picks a configured store). It is checked here first: a bad key raises ConfigError
    naming it and nothing is sent. The gateway is `gateway`, else $OPENFAAS_URL, else the local runtime.

        >>> job = train(dataset="synthetic", train_samples=4000, hidden_sizes=[32], number_of_workers=2)  # doctest: +SKIP
        >>> job.wait()["state"]               # doctest: +SKIP
        'done'
    """
    body = request_body(config, **keys)
    checked = load_request({}, body)  # as the function will read it
    running = None if gateway or os.environ.get("OPENFAAS_URL") else control.read_state(directory)
    if running is not None:  # the local runtime: one it lacks is refused here, with the command that gives it one
        wanted = optional_stores.needed(checked.store, checked.channel)
        optional_stores.refuse_missing(running, wanted, "store" if checked.store in wanted else "channel",
                                       None if directory == DEFAULT_DIR else directory)
    return submit(connect(gateway, directory), body, directory)
