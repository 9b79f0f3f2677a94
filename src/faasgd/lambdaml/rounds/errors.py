"""The rounds' errors, in faasgd's one hierarchy (FaasgdError); each names the round and the object."""

from __future__ import annotations

from faasgd.errors import FaasgdError


class RoundError(FaasgdError):
    """Raised when a synchronous round cannot complete; the root of the rounds' errors. Names the round."""

    http_status = 500

    def __init__(self, round_no: int, message: str):
        self.round_no = round_no
        super().__init__(f"round {round_no}: {message}")


class RoundTimeout(RoundError):
    """Raised when a round's barrier is not passed before its deadline; names the workers that did not arrive.

    504, like StoreTimeout: nothing is corrupt, a peer is late or gone. The job's supervision decides
    whether that worker is re-invoked from its checkpoint or the job fails with this reason.
    """

    http_status = 504

    def __init__(self, round_no: int, missing: list[int], waited_for: str, waited_s: float):
        self.missing = list(missing)
        self.waited_for = waited_for
        super().__init__(round_no, f"waited {waited_s:.3g} s for {waited_for} of workers {self.missing}; "
                                   "they did not arrive before round_timeout_s")


class RoundDataError(RoundError):
    """Raised when a round's object is unreadable, of another round, of the wrong shape, or already cleared;
    names the object and the worker that wrote it."""

    def __init__(self, round_no: int, name: str, worker_id: int, detail: str):
        self.name, self.worker_id = name, worker_id
        super().__init__(round_no, f"object {name!r} (from worker {worker_id}): {detail}")
