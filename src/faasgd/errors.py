"""One exception hierarchy for the whole core; the function boundary maps it to HTTP statuses."""


class FaasgdError(Exception):
    """Raised for any failure faasgd knows how to describe; the root of every faasgd error."""

    http_status = 500


class ConfigError(FaasgdError, ValueError):
    """Raised when a configuration key is unknown or its value is out of range; names the field."""

    http_status = 400

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class TooLarge(ConfigError):
    """Raised when a job would not fit what its functions are configured for: a worker's memory or the store's
    space (memory_limit, store_budget), or a request body (max_request_bytes); names the setting to change."""

    http_status = 413


class MethodNotAllowed(FaasgdError):
    """Raised when a function is called with an HTTP method it does not serve; names the allowed ones."""

    http_status = 405

    def __init__(self, method: str, allow: tuple[str, ...]):
        self.field, self.allow = "method", allow
        super().__init__(f"method: {method} is not served here (allowed: {', '.join(allow)})")


class DataError(FaasgdError):
    """Raised when a dataset is missing, malformed or cannot be sharded as asked."""

    http_status = 500


class DataMissing(DataError):
    """Raised when a dataset is not on this machine; names it and the command that gets it.

    409 Conflict: the request is valid and the same request succeeds once the data is there. Not
    404 (the gateway's unknown function, the store's unknown job) nor 5xx (nothing failed, and
    OpenFaaS Pro's queue retries 5xx, which cannot help). The core never downloads.
    """

    http_status = 409

    def __init__(self, dataset: str, detail: str, command: str):
        self.dataset, self.command, self.field = dataset, command, "dataset"
        super().__init__(f"dataset: {dataset} is not on this machine ({detail}); get it with `{command}`")


class StoreError(FaasgdError):
    """Raised when the parameter store fails; names the store URL (password masked)."""

    http_status = 503

    def __init__(self, url: str, detail: str = ""):
        self.url = url
        self.detail = detail
        super().__init__(f"{self.kind}: {url}" + (f" ({detail})" if detail else ""))

    kind = "store error"


class StoreUnavailable(StoreError):
    """Raised when the store cannot be reached (connection refused, reset or closed)."""

    kind = "store unavailable"


class StoreTimeout(StoreError):
    """Raised when a store operation does not finish before its deadline."""

    http_status = 504
    kind = "store timeout"


class StoreConflict(StoreError):
    """Raised when an atomic update still conflicts after its bounded retries."""

    http_status = 503
    kind = "store conflict"


class StateLost(StoreError):
    """Raised when the store no longer holds part of a running job's state (restarted empty, evicted): the
    job fails with that reason and is never re-initialised."""

    http_status = 500
    kind = "store lost state"


class JobNotFound(FaasgdError):
    """Raised when a job id has no records in the store."""

    http_status = 404

    def __init__(self, job_id: str):
        self.job_id, self.field = job_id, "job_id"
        super().__init__(f"job_id: no job {job_id!r} in the store")


class JobEnded(FaasgdError):
    """Raised when a job that has ended is asked to do what only a running job can (be cancelled); names its state."""

    http_status = 409

    def __init__(self, job_id: str, state: str, action: str = "cancel"):
        self.job_id, self.state, self.field = job_id, state, "job_id"
        super().__init__(f"job_id: job {job_id!r} has ended ({state}): nothing to {action}")


class NoModel(FaasgdError):
    """Raised when a job has no model to give: still training below its target (try again later), or it
    ended without one (it failed before any parameters could be kept)."""

    http_status = 409

    def __init__(self, job_id: str, why: str):
        self.job_id, self.field = job_id, "model"
        super().__init__(f"model: job {job_id!r} {why}")


class GatewayError(FaasgdError):
    """Raised when the OpenFaaS gateway cannot be reached or refuses an invocation; names the URL."""

    http_status = 502

    def __init__(self, url: str, detail: str):
        self.url = url
        super().__init__(f"gateway: {url} ({detail})")


class TrackerFailed(FaasgdError):
    """Raised when a tracker (faasgd.tracking: an MLPerf-format log, TensorBoard files, an MLflow run) could not
    record a job; the job itself and its result are unaffected. Names each tracker and what went wrong."""
