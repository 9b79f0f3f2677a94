"""Faults as faults against the local runtime: one fresh `faasgd up` per fault, four small jobs at
once (loop and per-iteration, on Redis and on Memcached) driven to mid-training, one fault injected
from outside (faasgd.testing.faults: signals, stores stopped or replaced; or the queue told to drop or
duplicate deliveries, a tight exec_timeout), then each job's end read back with what it cost.
tests/e2e/test_faults.py asserts on the outcomes; bench/faults.py prints the matrix as a table.

A runtime runs a project (the folder holding stack.yml, template/ and the handlers: the repository):
its `faasgd` commands run there and its stack file is a copy of the project's.

Exactness: a job's pushes are fixed by its shape (every worker pushes every n_push steps and at
the end of each epoch), so a job that ends `done` must show exactly that many pushes, the store's
version must equal them, and the samples must be epochs x rows: a step trained twice, or a push
applied twice, shows up as a difference.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faasgd.data import validation_rows
from faasgd.errors import FaasgdError
from faasgd.local import credentials, free_port
from faasgd.openfaas import GatewayClient
from faasgd.store import open_store
from faasgd.testing import stacks

ROWS, WORKERS, BATCH, EPOCHS = 2000, 2, 16, 8
TRAINED = ROWS - ROWS // 10  # the rows trained on: a tenth is held out to validate (validation_samples 0)
JOB = {"dataset": "synthetic", "train_samples": ROWS, "test_samples": 500, "hidden_sizes": [32],
       "batch_size": BATCH, "n_fetch": 1, "n_push": 1, "target_accuracy": 1.0, "number_of_workers": WORKERS,
       "lease_s": 2, "start_timeout_s": 4, "max_reinvocations": 3, "store_timeout_s": 5}
COMBOS = (("loop", "redis"), ("loop", "memcached"), ("per-iteration", "redis"), ("per-iteration", "memcached"))
RUNTIME_FLAGS = ("--queue-workers", "8")  # every worker of four concurrent jobs has a queue worker (CE: one call each)
# a loop job (its epochs in one call) runs an epoch about three times as fast as a per-iteration job (a call an
# epoch): measured at the strike, loop jobs stood at epoch 5-6 when per-iteration ones reached 2. Thrice the epochs
# keep it mid-training when the fault comes (run_matrix's `epochs` is the per-iteration jobs')
LOOP_EPOCHS = 3
SUPERVISE_EVERY_S = 5.0  # faasgd.functions.supervise.SUPERVISE_EVERY_S
END_BOUND_S = 120.0  # every scenario's job must be over by then


def faasgd(project: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The `faasgd` command run in `project` (`faasgd up` finds the template there)."""
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=project)


def expected_pushes(epochs: int, rows: int = TRAINED // WORKERS, batch: int = BATCH, n_push: int = 1) -> int:
    """One worker's pushes: every n_push steps (counted across epochs) and at each epoch's end if any is pending."""
    steps, pushes = math.ceil(rows / batch), 0
    for epoch in range(epochs):
        first, last = epoch * steps + 1, (epoch + 1) * steps
        pushes += last // n_push - (first - 1) // n_push + (last % n_push != 0)
    return pushes


@dataclass
class Runtime:
    """One `faasgd up` of `project` in its own folder; `stop()` is `faasgd down`."""

    project: Path
    directory: Path
    port: int
    flags: tuple[str, ...] = ()
    stack: str = "stack.yml"  # relative to `project`, or absolute
    state: dict = field(default_factory=dict)
    extra: list = field(default_factory=list)  # servers a scenario started in the runtime's place

    def up(self) -> Runtime:
        # --wait: a fault strikes the replicas the state file lists, so every one is there and serving first
        run = faasgd(self.project, "up", "--port", str(self.port), "--dir", str(self.directory), "-f", self.stack,
                     "--wait", *self.flags)
        if run.returncode != 0:
            raise RuntimeError(f"faasgd up failed: {run.stdout[-2000:]} {run.stderr[-2000:]}")
        self.state = json.loads((self.directory / "state.json").read_text())
        return self

    def stop(self) -> None:
        faasgd(self.project, "down", "--dir", str(self.directory))
        for server in self.extra:
            server.stop()

    @property
    def gateway(self) -> GatewayClient:
        return GatewayClient(self.state["gateway_url"], 10, auth=credentials.read(self.directory / "secrets"))

    def replica_pids(self, function: str = "emnist-train") -> list[int]:
        return self.gateway.request("GET", f"/system/function/{function}").json()["pids"]

    def log(self) -> str:
        """The runtime's own log (one line per delivery of an async call)."""
        return (self.directory / "logs" / "runtime.log").read_text(errors="replace")

    def store_pid(self, store: str) -> int:
        return self.state["stores"][store]["pid"]

    def store(self, store: str):
        # the runtime's Redis requires the secret store-password when there is one (always under docker)
        return open_store(self.state["stores"][store]["url"], secrets_dir=str(self.directory / "secrets"))


@dataclass
class Outcome:
    fault: str
    mode: str
    store: str
    state: str  # done | failed | lost | running (not over within END_BOUND_S)
    seconds: float  # from the fault to the job's end
    reason: str | None
    pushes: int | None
    expected_pushes: int
    version: int | None
    samples: int | None
    expected_samples: int
    invocations: int  # calls that trained, all workers
    notes: list[str] = field(default_factory=list)
    job_id: str | None = None

    @property
    def exact(self) -> bool:
        """Done with exactly the pushes, version and samples of a run without the fault."""
        return (self.state == "done" and self.pushes == self.expected_pushes == self.version
                and self.samples == self.expected_samples)

    def row(self) -> str:
        extra = f"{self.samples - self.expected_samples:+d}" if self.state == "done" and self.samples else ""
        reason = (self.reason or "")[:100] + ("..." if len(self.reason or "") > 100 else "")
        return (f"| {self.fault} | {self.mode} | {self.store} | {self.state} | {self.seconds:.1f} | "
                f"{'yes' if self.exact else 'no'} | {extra} | {self.invocations} | {reason} |")


def read_status(gateway: GatewayClient, query: dict) -> dict:
    """The job's status, or "unknown" while the status cannot be read (the store is paused, the gateway down)."""
    try:
        return gateway.job_status(query, timeout_s=5)
    except (FaasgdError, OSError) as error:
        return {"state": "unknown", "error": str(error)}


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout_s}s")
        time.sleep(0.1)


Inject = Callable[[Runtime, list[dict]], "str | None"]  # a fault, given the status queries of the jobs it hits


def run_matrix(runtime: Runtime, fault: str, inject: Inject, combos=COMBOS, epochs: int = EPOCHS,
               at_epoch: int | None = 2, **overrides) -> list[Outcome]:
    """One job per (mode, store) of `combos`, all at once (a loop job LOOP_EPOCHS times `epochs`); the fault is
    injected once every job has a worker at `at_epoch` (0: right after the fan-outs; None: before any job is
    posted), then each job is waited for to its end. Each outcome notes whether its job was still running when
    the fault came, and the furthest epoch a worker of it had reached."""
    bodies = [{**JOB, "store": store, "invocation_mode": mode,
               "max_epochs": epochs * (LOOP_EPOCHS if mode == "loop" else 1), **overrides} for mode, store in combos]
    note = inject(runtime, [{"store": store} for _, store in combos]) if at_epoch is None else None
    queries = []
    for body in bodies:
        answer = runtime.gateway.invoke("emnist-setup", body)
        if answer.status != 202:
            raise RuntimeError(f"emnist-setup answered {answer.status}: {answer.body[:500]!r}")
        queries.append(answer.json()["status_query"])
    if at_epoch:
        wait_until(lambda: strike_now([read_status(runtime.gateway, q) for q in queries], at_epoch,
                                        [b["max_epochs"] for b in bodies]), 60,
                   f"not every job reached epoch {at_epoch}")
    before = [{"state": "running"} if at_epoch is None else read_status(runtime.gateway, q) for q in queries]
    running = [s.get("state") == "running" for s in before]
    started = time.monotonic()
    if at_epoch is not None:
        note = inject(runtime, queries)
    ended: dict[int, tuple[dict, float]] = {}
    deadline = started + END_BOUND_S
    gateway = runtime.gateway  # the runtime may have been restarted by the fault
    while len(ended) < len(queries) and time.monotonic() < deadline:
        for i, query in enumerate(queries):
            if i not in ended:
                status = read_status(gateway, query)
                if status["state"] not in ("running", "unknown"):
                    ended[i] = (status, time.monotonic() - started)
        time.sleep(0.3)
    outcomes = []
    for i, ((mode, store), body, query) in enumerate(zip(combos, bodies, queries)):
        status, seconds = ended.get(i, ({"state": "running"}, time.monotonic() - started))
        result, rows = status.get("result") or {}, body["train_samples"]
        rows -= validation_rows(rows, body.get("validation_samples", 0))  # held out: never trained on
        workers = [w for w in status.get("workers", []) if w]
        notes = [n for n in (note, None if running[i] else "the job had ended before the fault") if n]
        if at_epoch is not None:
            notes.append(f"struck at epoch {_epoch(before[i])}")
        outcomes.append(Outcome(
            fault, mode, store, status["state"], seconds, result.get("error") or result.get("reason"),
            result.get("pushes"), WORKERS * expected_pushes(body["max_epochs"], rows // WORKERS),
            _version(runtime, store, query["job_id"]), result.get("samples"), body["max_epochs"] * rows,
            sum(w.get("invocations", 0) for w in workers), notes, query["job_id"]))
    return outcomes


def applied_once(runtime: Runtime, outcome: Outcome, settle_s: float = 15.0) -> tuple[int | None, int]:
    """(version, the sum of the workers' recorded pushes) once they agree, or as last read after `settle_s`.

    A failed job's result is written at the first failure; a worker still running may push until it sees
    that the job ended (or its push in flight lands when a paused store answers again), so the version is
    compared with the workers' own records, each written atomically with its pushes, once they have stopped.
    """
    from faasgd import job

    store = runtime.store(outcome.store)
    deadline, pair = time.monotonic() + settle_s, (None, -1)
    while time.monotonic() < deadline:
        try:
            config, _ = job.read_job(store, outcome.job_id)
            records = job.read_progress(store, outcome.job_id, config.number_of_workers)
            pair = (store.get_weights(outcome.job_id)[1], sum(int((r or {}).get("pushes", 0)) for r in records.values()))
        except FaasgdError:
            pass
        if pair[0] == pair[1]:
            return pair
        time.sleep(0.3)
    return pair


def strike_now(statuses: list[dict], at_epoch: int, epochs: list[int]) -> bool:
    """Whether the fault is due: every job at `at_epoch`; or, when a job has epochs to spare, it still runs past
    half of its `epochs` (one count per status). A loop job runs its epochs in one call while a per-iteration job
    (a call an epoch) may still be at its first, and a fault after a job's end strikes nothing (its outcome says
    so, and the tests refuse that): half a job is a window a status poll of four jobs never misses."""
    if all(_reached(s, at_epoch) for s in statuses):
        return True
    return any(s.get("state") == "running" and e // 2 > at_epoch and _reached(s, e // 2)
               for s, e in zip(statuses, epochs))


def _reached(status: dict, epoch: int) -> bool:
    return status.get("state") not in ("running", "unknown") or \
        any(w and w.get("epoch", 0) >= epoch for w in status.get("workers", []))


def _epoch(status: dict) -> int:
    return max([w.get("epoch", 0) for w in status.get("workers", []) if w] or [0])


def _version(runtime: Runtime, store: str, job_id: str) -> int | None:
    try:
        return runtime.store(store).get_weights(job_id)[1]
    except FaasgdError:
        return None


def stack_copy(project: Path, directory: Path, exec_timeout_s: int | None = None, drain_s: int = 1) -> str:
    """`project`'s stack.yml for a fault study (stacks.stack_copy: replicas drain for `drain_s`); when given,
    emnist-train's exec_timeout (with its read/write timeouts) is `exec_timeout_s`."""
    def cut(stack: dict) -> None:
        env = stack["functions"]["emnist-train"]["environment"]
        env.update({key: f"{exec_timeout_s}s" for key in ("exec_timeout", "read_timeout", "write_timeout")})
    return stacks.stack_copy(project, directory, drain_s, cut if exec_timeout_s else None)


def fresh_runtime(project: Path, directory: Path, *flags: str, stack: str | None = None) -> Runtime:
    """`faasgd up` of `project` in `directory` with RUNTIME_FLAGS and `flags`, on `stack` (default: stack_copy's,
    1 s drain)."""
    return Runtime(project, directory / ".faasgd", free_port(), (*RUNTIME_FLAGS, *flags),
                   stack or stack_copy(project, directory / "stack")).up()
