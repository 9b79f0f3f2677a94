"""Pushes applied exactly once: push ids, what a push saw, and the rules for a worker's record.

A worker's pushes are numbered 1, 2, 3 ... (its `PushId.seq`). Each push carries the worker's
record (its progress and checkpoint, written by the store *atomically with the add*), in which
`pushes` is the number of that worker's pushes applied and `owner` names the invocation that wrote
it. So the store always knows which pushes of a worker it has applied, and a push whose number it
already holds is never added again, however it comes back: a client retry after a timeout, a resend
after a connection loss, a redelivered or re-invoked call, another invocation of the same worker.
  * stored pushes < seq             -> apply the push (add, write the record, count the version)
  * stored pushes >= seq, our owner -> it is ours and already applied (our earlier attempt got through)
  * stored pushes >= seq, other     -> another invocation owns this worker now: nothing is added,
                                       and the caller learns it was superseded (`Push.applied` False)
Invariant: a job's version equals the sum of its workers' `pushes` (Memcached derives it so).
Likewise the minibatch steps in the parameters are the sum of the writers' `pushed_steps` (each push's
record says how many of the worker's steps its pushes hold so far): fetches and pushes report it
(`Snapshot.steps`, `Push.steps`), read with the weights, so a worker counts staleness in steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from faasgd.checks import whole_number
from faasgd.errors import ConfigError

APPLY, MINE, SUPERSEDED = "apply", "mine", "superseded"
STATE_RANK = {"running": 0, "finished": 1, "failed": 1}  # a final record is never overwritten by a running one


@dataclass(frozen=True)
class PushId:
    """Which push this is: worker `worker`'s push number `seq` (1 for its first)."""

    worker: int
    seq: int

    def __post_init__(self) -> None:
        for name in ("worker", "seq"):
            whole_number(getattr(self, name), f"push_id.{name}", low=1 if name == "seq" else 0)


@dataclass(frozen=True)
class Push:
    """What one push_update saw."""

    version: int  # the job's version right after this push (or as found, when not applied)
    conflicts: int  # optimistic writes of this push that lost a race and were redone (per chunk on Memcached)
    retries: int  # attempts after the first
    applied: bool = True  # False: another invocation of this worker had applied this push number already
    steps: int | None = None  # minibatch steps in the parameters right after it: the writers' pushed_steps summed


@dataclass(frozen=True)
class Snapshot:
    """What one fetch read besides the weights: their version and the minibatch steps they hold."""

    version: int
    steps: int | None  # the writers' pushed_steps summed, read with the weights; None: unknown (a cache copy)


class LostRace(Exception):
    """Raised inside a push attempt when another writer got there first; the attempt is redone."""


def check_record(push_id: PushId, record: dict) -> None:
    """The record a push carries must say it is this push's: `pushes` == seq, and name its `owner`."""
    if not isinstance(record, dict) or record.get("pushes") != push_id.seq or not record.get("owner"):
        raise ConfigError("record", f"a push's worker record needs pushes={push_id.seq} and an owner, "
                                    f"got pushes={getattr(record, 'get', lambda _: None)('pushes')!r}")


def decide(stored: dict | None, push_id: PushId, record: dict) -> str:
    """APPLY, MINE or SUPERSEDED for a push against the worker's stored record."""
    if pushes_of(stored) < push_id.seq:
        return APPLY
    return MINE if stored.get("owner") == record.get("owner") else SUPERSEDED


def may_replace(stored: dict | None, record: dict) -> bool:
    """Whether a worker's record may overwrite the stored one (a write between pushes, at an epoch's end,
    at the end): never to fewer pushes, never a final record by a running one."""
    if stored is None:
        return True
    return (pushes_of(record), STATE_RANK.get(record.get("state"), 0)) >= \
        (pushes_of(stored), STATE_RANK.get(stored.get("state"), 0))


def pushes_of(record: dict | None) -> int:
    return int((record or {}).get("pushes") or 0)


def steps_of(records: list[dict | None]) -> int:
    """Minibatch steps the writers' applied pushes hold: their records' `pushed_steps` summed."""
    return sum(int((r or {}).get("pushed_steps") or 0) for r in records)
