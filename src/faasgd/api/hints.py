"""Errors that name the next step: a job not found says which store was looked in, which other stores the
function has configured, and how to name one (the CLI's flag and the Python keyword).

    try:
        job.status()
    except JobNotFound as error:     # faasgd.errors.JobNotFound, its message extended
        print(error)
    # job_id: no job 'j3f…' in the function's default store (its stores: default, redis, memcached);
    # a job on another store: `faasgd status j3f… --store redis` (Python: store='redis')
"""

from __future__ import annotations

from faasgd.errors import ConfigError, FaasgdError, JobNotFound
from faasgd.functions.settings import named_stores
from faasgd.openfaas import SETUP_FUNCTION, FunctionError, GatewayClient
from faasgd.store.url import mask_password


class FunctionNotDeployed(FunctionError):
    """Raised when a function the call needs is not deployed on the local runtime and the runtime knows why (its
    image): the message names what is missing and the next commands."""


def not_deployed(error: FunctionError, client: GatewayClient, function: str,
                 directory: str | None) -> FunctionNotDeployed | None:
    """A 404 for `function` from the local runtime of `directory` that waits for its image (faasgd.local.
    waiting_images): the error saying so; None for any other error or gateway."""
    from faasgd.local import control
    from faasgd.local import not_deployed as why

    if error.http_status != 404 or directory is None:
        return None
    state = control.read_state(directory)
    if not state or str(state.get("gateway_url", "")).rstrip("/") != client.url.rstrip("/"):
        return None
    message = why(function, state)
    return FunctionNotDeployed(404, message) if message else None


class JobNotFoundIn(JobNotFound):
    """A JobNotFound whose message says where the job was looked for and how to look elsewhere."""

    def __init__(self, job_id: str, where: str, next_step: str):
        super().__init__(job_id)
        self.where, self.next_step = where, next_step
        FaasgdError.__init__(self, f"job_id: no job {job_id!r} in {where}; {next_step}")


def is_not_found(error: FaasgdError) -> bool:
    """The store has no such job: raised by the store itself, or answered 404 on job_id by emnist-setup."""
    if isinstance(error, JobNotFound):
        return True
    return isinstance(error, FunctionError) and error.http_status == 404 and error.field == "job_id"


def configured_stores(client: GatewayClient) -> list[str]:
    """The store names emnist-setup has configured (its `stores` env, names only), when the gateway reports its
    envVars (the local runtime does; faas-netes does not): [] when unknown."""
    try:
        env = client.function_status(SETUP_FUNCTION).get("envVars") or {}
    except (FaasgdError, AttributeError):
        return []
    try:
        names = list(named_stores(str(env.get("stores") or "")))  # a pool's URL has commas of its own
    except ConfigError:
        names = []
    return ["default", *names]


def through_gateway(job_id: str, store: str | None, stores: list[str], verb: str) -> JobNotFoundIn:
    """Not found through the gateway: in the function's default store, or in the store named `store`."""
    where = f"the function's store {store!r}" if store else "the function's default store"
    if stores:
        where += f" (its stores: {', '.join(stores)})"
    others = [name for name in stores if name not in ("default", store)]
    example = others[0] if others else "NAME"
    steps = [f"`faasgd {verb} {job_id} --store {example}` (Python: store={example!r})"]
    if store:
        steps.insert(0, "leave out --store for the default store (Python: store=None)")
    return JobNotFoundIn(job_id, where, f"a job on another store: {', or '.join(steps)}"
                                        + ("; else check the job id" if store else ""))


def in_store(job_id: str, store_url: str, verb: str) -> JobNotFoundIn:
    """Not found reading a store directly: name that store and how to read another."""
    return JobNotFoundIn(job_id, f"the store {mask_password(store_url)}",
                         f"read the store that holds it: `faasgd {verb} {job_id} --direct --store-url URL` "
                         f"(Python: store_url='URL'), or check the job id")
