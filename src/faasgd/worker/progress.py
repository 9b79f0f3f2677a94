"""A worker's progress and checkpoint: its record in the store (`progress:<worker>`).

The record is written atomically with each of the worker's pushes (store/push.py), so it is always a
checkpoint the worker can resume from with nothing trained twice: the counters, the RNG state after
the last pushed step, where in the epoch that step was (and the RNG state the epoch's order was drawn
from), and the invocation that owns the worker (`owner`). `pushes` is the number of its pushes the
store has applied. Status answers show `public(record)`: everything but the RNG states.

The progress keeps what concerns one kind of worker or one question in its own part: `downpour` (PushCounts:
fetches, conflicts, staleness, bytes, the residual), `lambdaml` (RoundCounts: rounds and what they cost) and
`billing` (CallBilling: billed time and CPU), `straggling` (Straggling: slowed on purpose, and waits of the mitigations). The record is flat all the same: `record` writes every part's fields
beside the others, under the names records have always had (NAMES), and `from_record` puts them back in their parts.

What rides with every push is kept small (a worker's bytes a push interval besides the push itself,
docs/explanation/performance.md): the RNG states packed in one string each (`pack_rng`), durations to the
microsecond, and no resource profile: `resources` (about a third of the record) goes to its own record
`resources:<worker>`, written with the heartbeat about once a second and at the call's end
(profile/bursts.py `resources_record`; worker/liveness.py, profile/worker_profile.py), and put back beside
the record by the readers that show or sum it (faasgd.job.records.read_progress with resources=True,
read_status) and by a call that resumes the worker (worker/invocation.py).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from faasgd.worker.call_clock import CallClock
from faasgd.call_cpu import joined


@dataclass
class PushCounts:
    """Downpour's exchange with the store, as this worker saw it (downpour/exchange.py)."""

    fetches: int = 0
    conflicts: int = 0  # races this worker's own pushes lost (each push returns its count)
    staleness_hist: dict[int, int] = field(default_factory=dict)  # push staleness in steps (downpour/comm.py) -> count
    last_staleness: int | None = None
    comm_wait_s: float = 0.0  # seconds the worker waited on fetches and pushes (all of them when blocking)
    push_bytes: int = 0  # bytes of the updates its applied pushes handed over, as encoded (config push_codec)
    fetch_bytes: int = 0  # bytes of parameters its fetches and pushes brought back (float32, 4 per parameter)
    pushed_steps: int = 0  # minibatches in this worker's applied pushes (the store sums them: steps the weights hold)
    residual: str = ""  # blob of the error-feedback residual right after push `pushes` (downpour/residual.py); "": zeros
    residual_resets: int = 0  # calls resumed from zeros: the call before died mid-call, its residual dropped

    def record_staleness(self, lag: int) -> None:
        lag = max(0, int(lag))
        self.last_staleness = lag
        self.staleness_hist[lag] = self.staleness_hist.get(lag, 0) + 1


@dataclass
class RoundCounts:
    """LambdaML's synchronous rounds (lambdaml/sync_worker.py): rounds done (the checkpoint) and what they cost."""

    rounds: int = 0  # rounds completed: the next round to run; its state is the checkpoint blob of this round
    round_bytes_written: int = 0  # object bytes this worker wrote in its rounds (RoundStats.bytes_written)
    round_bytes_read: int = 0  # object bytes it read in them
    barrier_wait_s: float = 0.0  # seconds it waited at the rounds' barriers (RoundStats.wait_s)
    params_digest: str = ""  # sha256 of the global parameters at its last epoch end (the same on every worker)


@dataclass
class Straggling:
    """A worker slowed on purpose (config slow_factor, the runtime's --chaos slow) and what the mitigations cost it
    (worker/straggler.py)."""

    slow_factor: float = 1.0  # the factor its latest call was slowed by (1: not slowed)
    slowed_s: float = 0.0  # seconds it slept on purpose after its steps: (slow_factor - 1) x each step's time
    bound_waits: int = 0  # downpour's max_staleness: times it waited for the slowest worker
    bound_wait_s: float = 0.0  # seconds it spent in those waits
    late_rounds: int = 0  # backup workers: rounds merged without its contribution (dropped, or taken as merged)
    merged_contributions: int = 0  # backup workers: contributions it merged as the rounds' merger (worker 0)


@dataclass
class CallBilling:
    """What its calls are billed for (worker/call_clock.py) and cost in CPU (call_cpu.py): each call from its entry
    to its last record (billed on time.monotonic)."""

    billed_s: float = 0.0  # seconds of all its calls (the running one up to this record)
    billed_gb_s: float = 0.0  # the same, each call's seconds times its memory limit in GB
    memory_mb: float | None = None  # the memory limit its latest call was billed at
    cold_starts: int = 0  # its calls that were the first call their replica process served
    clock_error_s: float = 0.0  # its stamps are right within this either way: its calls' largest CallClock.error_s
    cpu_s: float = 0.0  # CPU-seconds of all its calls (the running one up to this record)
    cpu_clock: str = ""  # what they were counted on: process, threads, or mixed (its calls differed); "" before any


@dataclass
class WorkerProgress:
    """Everything about one worker that outlives a minibatch (and, in per-iteration mode, an invocation). Its
    record is flat: the fields of `downpour`, `lambdaml` and `billing` sit beside the others (record, from_record)."""

    worker_id: int
    rng_state: dict[str, Any]  # numpy bit-generator state of default_rng(seed + worker_id)
    state: str = "running"  # running | finished | failed
    epoch: int = 0  # completed passes over this worker's shard
    step: int = 0  # minibatches done
    samples: int = 0  # training samples processed
    shard_size: int = 0  # rows in this worker's shard
    loss: float | None = None  # mean training loss of the last epoch
    accuracy: float | None = None  # validation accuracy of the global parameters at the last epoch end it evaluated
    accuracy_epoch: int = 0  # that epoch (Downpour: one worker a round of epoch ends evaluates, worker/curve_rows.py)
    pushes: int = 0  # its checkpoints the store applied: Downpour's pushes, LambdaML's rounds
    retries: int = 0  # store calls retried after an outage
    train_s: float = 0.0  # seconds spent in training epochs (excludes loading and evaluation)
    # seconds its calls spent, by what (perf_counter, summed over calls; job/result.py SPLIT): what is not in it nor comm_wait_s
    # of the intervals' wall time is the rest (records, submitting operations, the loop itself, start-up)
    time_split: dict[str, float] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    replicas: list[str] = field(default_factory=list)  # where it ran (pod or replica names), in order of first use
    owner: str = ""  # the invocation training this worker now (its call id and a nonce)
    epoch_step: int = 0  # minibatches of the current epoch done (0 between epochs)
    epoch_rng_state: dict[str, Any] | None = None  # RNG state the current epoch's order was drawn from
    epoch_loss_sum: float = 0.0  # the current epoch's training loss, summed over its minibatches
    invocations: int = 0  # calls that trained this worker (more than one: resumed, handed off or re-invoked)
    intervals: list[list[float]] = field(default_factory=list)  # [start, end] of each call's training (end: its last record)
    resources: dict[str, Any] = field(default_factory=dict)  # resource stats of its calls so far (profile/worker_profile.py)
    downpour: PushCounts = field(default_factory=PushCounts)
    lambdaml: RoundCounts = field(default_factory=RoundCounts)
    billing: CallBilling = field(default_factory=CallBilling)
    straggling: Straggling = field(default_factory=Straggling)

    def spend(self, kind: str, seconds: float) -> None:
        """Add `seconds` to `time_split[kind]` (one of faasgd.job.result.SPLIT)."""
        self.time_split[kind] = self.time_split.get(kind, 0.0) + seconds

    def note_replica(self) -> None:
        """Record the replica running this worker now (HOSTNAME: the pod name on a cluster)."""
        name = os.environ.get("HOSTNAME") or socket.gethostname()
        if name not in self.replicas:
            self.replicas.append(name)

    @classmethod
    def fresh(cls, worker_id: int, seed: int) -> "WorkerProgress":
        rng = np.random.default_rng(seed + worker_id)
        return cls(worker_id=worker_id, rng_state=rng.bit_generator.state)

    def begin_call(self, clock: CallClock) -> None:
        """This call (`clock`, anchored) trains the worker from now: a new interval from the call's entry, closed
        by each record written; the call's billing and CPU (from its entry) are added to every record it writes."""
        self._call = clock
        start = clock.started_at()
        self.intervals.append([start, start])
        billing = self.billing
        billing.cold_starts += int(clock.cold)
        billing.memory_mb = clock.memory_mb
        billing.clock_error_s = max(billing.clock_error_s, clock.error_s)
        if self.started_at is None:
            self.started_at = start

    def now(self) -> float:
        """Now on the job's timeline: the running call's clock (this host's wall clock outside a call)."""
        call = getattr(self, "_call", None)
        return call.now() if call is not None else time.time()

    def record(self, now: float | None = None) -> dict[str, Any]:
        """The worker's record as stored: every field, plus samples/s and when it was written (`now`: on the job's
        timeline, the running call's clock by default); the running call billed and its CPU counted up to now."""
        now = self.now() if now is None else now
        out = {name: copied(getattr(self if group is None else getattr(self, group), name))  # as dataclasses.asdict,
               for name, group in SENT_PLACES}  # flat, at a fifth of its time
        out["rng_state"] = pack_rng(self.rng_state)
        out["epoch_rng_state"] = pack_rng(self.epoch_rng_state)
        call = getattr(self, "_call", None)
        if call is not None:
            billed = call.billed()
            out["billed_s"] = self.billing.billed_s + billed["billed_s"]
            out["billed_gb_s"] = self.billing.billed_gb_s + billed["billed_gb_s"]
            cpu_s, cpu_clock = call.cpu.used()
            out["cpu_s"], out["cpu_clock"] = self.billing.cpu_s + cpu_s, joined(self.billing.cpu_clock, cpu_clock)
        out["staleness_hist"] = {str(k): v for k, v in self.downpour.staleness_hist.items()}
        if self.intervals:  # the running call's training lasts until this record, as far as anyone knows
            out["intervals"][-1] = [self.intervals[-1][0], max(self.intervals[-1][0], now)]
        out["samples_per_s"] = self.samples / self.train_s if self.train_s > 0 else 0.0
        out["updated_at"] = now
        for name in GROUP_FIELDS["straggling"]:  # most workers are never slowed nor held: no bytes on their pushes
            if out[name] == STRAGGLING_DEFAULTS[name]:
                del out[name]
        return compact(out)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "WorkerProgress":
        """The progress a stored record describes (derived fields dropped)."""
        values = {k: v for k, v in record.items() if k in FIELDS}
        for name in ("rng_state", "epoch_rng_state"):
            if name in values:
                values[name] = unpack_rng(values[name])
        values["staleness_hist"] = {int(k): int(v) for k, v in values.get("staleness_hist", {}).items()}
        groups = {group: kind(**{name: values.pop(name) for name in GROUP_FIELDS[group] if name in values})
                  for group, kind in GROUPS.items()}
        return cls(**values, **groups)


# A record travels with every push: its durations are kept to the microsecond (their clocks' resolution at best: sums
# of perf_counter or process-clock intervals), where repr wrote 17 digits; timestamps on the job's timeline keep every
# digit. The resource profile's sampled figures (in their own record) keep 6 significant digits.
SECONDS = ("train_s", "comm_wait_s", "slowed_s", "bound_wait_s", "billed_s", "billed_gb_s", "clock_error_s", "cpu_s", "loss", "epoch_loss_sum")


def compact(record: dict[str, Any]) -> dict[str, Any]:
    """`record` (a fresh copy) with its durations rounded to the microsecond, samples/s to a tenth and the resource
    profile's figures to 6 significant digits."""
    for name in SECONDS:
        if isinstance(record.get(name), float):
            record[name] = round(record[name], 6)
    record["time_split"] = {kind: round(spent, 6) for kind, spent in record["time_split"].items()}
    record["samples_per_s"] = round(record["samples_per_s"], 1)
    return record


def pack_rng(state: dict[str, Any] | None) -> str | dict[str, Any] | None:
    """A PCG64 bit generator's state in one string, `PCG64:<state>:<inc>:<has_uint32>:<uinteger>` (hexadecimal):
    ~90 bytes in the record where its JSON dict took ~190. Any other state is kept as it is."""
    if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
        return state
    inner = state["state"]
    return f"PCG64:{inner['state']:x}:{inner['inc']:x}:{int(state['has_uint32'])}:{int(state['uinteger']):x}"


def unpack_rng(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """The state `pack_rng` packed (a dict, as records written before the packing held, is returned as it is)."""
    if not isinstance(value, str):
        return value
    kind, state, inc, has_uint32, uinteger = value.split(":")
    if kind != "PCG64":
        raise ValueError(f"rng_state: not a PCG64 state: {value[:16]!r}")
    return {"bit_generator": "PCG64", "state": {"state": int(state, 16), "inc": int(inc, 16)},
            "has_uint32": int(has_uint32), "uinteger": int(uinteger, 16)}


def copied(value: Any) -> Any:
    """A record field's value with its dicts, lists and tuples copied all the way down (the rest is immutable), so a
    record taken at a push stays as it was while the worker goes on (the push serialises it on another thread)."""
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copied(item) for item in value]
    if isinstance(value, tuple):
        return tuple(copied(item) for item in value)
    return value


GROUPS = {"downpour": PushCounts, "lambdaml": RoundCounts, "billing": CallBilling, "straggling": Straggling}  # the record holds their fields flat
GROUP_FIELDS = {group: tuple(f.name for f in dataclasses.fields(kind)) for group, kind in GROUPS.items()}
STRAGGLING_DEFAULTS = dataclasses.asdict(Straggling())  # a record leaves these fields out at their defaults
PLACES = {name: group for group, names in GROUP_FIELDS.items() for name in names}  # a group's field -> the group
# the progress's fields, flat, in the order its records have always held them
NAMES = ("worker_id", "rng_state", "state", "epoch", "step", "samples", "shard_size", "loss", "accuracy", "accuracy_epoch",
         "pushes", "fetches", "conflicts", "retries", "staleness_hist", "last_staleness", "train_s", "comm_wait_s",
         "time_split", "push_bytes", "fetch_bytes", "pushed_steps", "residual", "residual_resets", "started_at",
         "finished_at", "error", "replicas", "owner", "epoch_step", "epoch_rng_state", "epoch_loss_sum", "invocations",
         "intervals", "resources", "rounds", "round_bytes_written", "round_bytes_read", "barrier_wait_s",
         "params_digest", "billed_s", "billed_gb_s", "memory_mb", "cold_starts", "clock_error_s", "cpu_s", "cpu_clock",
         "slow_factor", "slowed_s", "bound_waits", "bound_wait_s",
         "late_rounds", "merged_contributions")
FIELDS = set(NAMES)
SENT = tuple(name for name in NAMES if name != "resources")  # the record's: resources have a record of their own
SENT_PLACES = tuple((name, PLACES.get(name)) for name in SENT)  # (field, its group or None)
