"""A synchronous all-reduce of float32 vectors, one round at a time, through a blob space.

    exchange = Exchange(store, job_id, worker_id, ExchangeConfig(pattern="reduce_scatter", workers=4))
    merged, stats = exchange.all_reduce(round_no, vector)   # every worker, same round_no, same length

A blob space is any object with put_blob(job_id, name, data) / get_blob(job_id, name) -> bytes | None
(ParameterStore over Redis and Memcached; the S3 channel). Nothing else is asked of it: no atomic add,
no delete, no listing, so the same rounds run over S3 as over a parameter server (LambdaML's channels).

Patterns (LambdaML's reduce and reduce_scatter):
- reduce: every worker but 0 writes its vector; worker 0 waits for them, merges, writes `merged`;
  the others wait for it and read it.
- reduce_scatter: the vector is split into `workers` contiguous slices (wire.split); worker i writes
  slice j for every j != i, waits for slice i from every other worker, merges it and writes merged
  slice i, then reads every other merged slice.
A merger's own contribution never leaves it. The merge sums in float64 in worker order 0..N-1 and
rounds once to float32 (divided by N for `mean`), element by element, so both patterns give the same
bits for the same inputs, whatever order the objects arrive in.

Deadlines: one per round (round_timeout_s from entering it). Every wait polls the missing objects,
sleeping poll_s, doubling up to poll_max_s, never past the deadline; then RoundTimeout names the
round and the workers whose objects are missing. Nothing waits without a deadline.

Re-entry (a worker re-invoked mid-round after a crash calls all_reduce again with the same round):
objects are named by round and worker, so a rewritten contribution replaces the first and is never
counted twice. A merger first looks for its merged slice: if it is there, the round was merged
already and that object is the result (it is written once; merging again is skipped). A space with
merged slots of its own (MergedSpace: the DynamoDB channel's merged table) writes a merged slice only
if none is there (a conditional put): of two mergers racing in one round (a worker and its re-invocation),
the second reads and returns the first's result, so the round is merged exactly once whatever the timing.
Other spaces keep merged slices as ordinary objects (_Overwritten): a racing re-merge writes the same bits.

Clearing: on entering round r, a worker overwrites the objects it wrote in round r - 2 with b""
(the store keeps at most the last two rounds' values, about 2 vectors per worker; the cleared names
stay until the job's keys go). Safe because a worker in round r has read round r - 1's result, which
needs every worker's round r - 1 contribution, so every worker has finished round r - 2. A worker that
re-enters a cleared round gets a RoundDataError saying so (its checkpoint is behind the others').

Backup workers (`backup`, reduce only): worker 0 merges round r as soon as it holds W - backup contributions (its
own and the first others to arrive; all that are there then), divides by how many it merged (`mean`), and writes
the round's members (`{tag}:r{round}:members`, JSON worker ids) before the merged object. A contribution that comes
later is dropped (never merged into another round: it was computed at round r's parameters). A worker that finds
round r merged before it starts it (`merged_if_ready`) takes the merged object without computing (the caller
applies it), so a late worker catches up instead of falling further behind; every worker still applies every
round's merge, so all hold the same bits. Clearing then lags BACKUP_KEEP_ROUNDS rounds, not two (a late worker
reads rounds the others passed); a worker that falls further behind gets the RoundDataError of a cleared object.

Accounting: all_reduce returns RoundStats: what this worker wrote and read (object bytes, header
included), its requests, and the seconds it spent in waits (polls, transfers and sleeps). With
H = wire.HEADER_BYTES, a vector of L float32 and N workers, per round:
    reduce          worker 0 writes H + 4L, reads (N-1)(H + 4L);  every other worker writes and reads H + 4L
    reduce_scatter  worker i (slice of l_i values) writes N·H + 4L, reads 2(N-1)H + 4(L + (N-2) l_i)
so with l_i = L/N a reduce_scatter worker reads 2/N of what reduce's worker 0 reads.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, fields
from typing import Callable, Protocol

import numpy as np

from faasgd.checks import positive_number, whole_number
from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds import wire
from faasgd.lambdaml.rounds.errors import RoundDataError, RoundTimeout
from faasgd.lambdaml.rounds.wire import MERGED, PART, Piece
from faasgd.store import keys

PATTERNS = ("reduce", "reduce_scatter")
OPS = ("mean", "sum")


BACKUP_KEEP_ROUNDS = 16  # with backup workers: rounds whose objects stay readable (a late worker may read them)


class BlobSpace(Protocol):
    def put_blob(self, job_id: str, name: str, data: bytes) -> None: ...

    def get_blob(self, job_id: str, name: str) -> bytes | None: ...


class MergedSlots(Protocol):
    """Where a round's merged slices go: written once (put_merged is False when one was there), read, cleared."""

    def put_merged(self, job_id: str, name: str, data: bytes) -> bool: ...

    def get_merged(self, job_id: str, name: str) -> bytes | None: ...

    def clear_merged(self, job_id: str, name: str) -> None: ...


class _Overwritten:
    """The merged slots of a plain blob space: ordinary objects, put_blob overwriting (a re-merge writes the same
    bits, as the merge is deterministic)."""

    def __init__(self, space: BlobSpace):
        self.space = space

    def put_merged(self, job_id: str, name: str, data: bytes) -> bool:
        self.space.put_blob(job_id, name, data)
        return True

    def get_merged(self, job_id: str, name: str) -> bytes | None:
        return self.space.get_blob(job_id, name)

    def clear_merged(self, job_id: str, name: str) -> None:
        self.space.put_blob(job_id, name, wire.CLEARED)


def merged_slots(space: BlobSpace) -> MergedSlots:
    """The space itself when it keeps merged slices apart, written once (MergedSlots), else _Overwritten over it."""
    if all(callable(getattr(space, method, None)) for method in ("put_merged", "get_merged", "clear_merged")):
        return space
    return _Overwritten(space)


@dataclass(frozen=True)
class ExchangeConfig:
    pattern: str = "reduce"  # reduce: worker 0 merges the whole vector; reduce_scatter: worker i merges slice i
    workers: int = 1  # N: workers taking part in every round, ids 0..N-1
    round_timeout_s: float = 60.0  # deadline of one round, from entering it to holding the merged vector
    poll_s: float = 0.002  # first pause between two polls of a missing object; doubles up to poll_max_s
    poll_max_s: float = 0.05  # longest pause between two polls
    op: str = "mean"  # merge: mean (sum / N) or sum; in float64 in worker order, rounded once to float32
    tag: str = "rounds"  # prefix of the objects' names, so one job can run several exchanges side by side
    backup: int = 0  # reduce: a round merges the first workers - backup contributions (backup workers); 0: all

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ConfigError("pattern", f"must be one of {', '.join(PATTERNS)}, got {self.pattern!r}")
        if self.op not in OPS:
            raise ConfigError("op", f"must be one of {', '.join(OPS)}, got {self.op!r}")
        whole_number(self.workers, "workers", low=1, high=4096, must="an integer 1 to 4096")
        for name in ("round_timeout_s", "poll_s", "poll_max_s"):
            positive_number(getattr(self, name), name, must="a positive number of seconds")
        if self.poll_max_s < self.poll_s:
            raise ConfigError("poll_max_s", f"must be at least poll_s ({self.poll_s}), got {self.poll_max_s}")
        wire.check_tag(self.tag)
        whole_number(self.backup, "backup", low=0, high=self.workers - 1, must=f"an integer 0 to {self.workers - 1}")
        if self.backup and self.pattern != "reduce":
            raise ConfigError("backup", f"backup workers need one merger: pattern reduce, got {self.pattern!r}")


@dataclass(frozen=True)
class RoundStats:
    """What one worker did in its rounds; add them up with `+`."""

    rounds: int = 0  # rounds completed
    bytes_written: int = 0  # object bytes this worker wrote (headers included; clearing writes none)
    bytes_read: int = 0  # object bytes this worker read
    puts: int = 0  # put_blob calls, clearing included
    gets: int = 0  # get_blob calls, polls of missing objects included
    wait_s: float = 0.0  # seconds in waits at the barrier: polls, transfers and sleeps
    merged: int = 0  # backup workers: contributions this worker merged as the merger, its own included
    late: int = 0  # rounds merged without this worker's contribution (backup workers: dropped, or taken as merged)

    def __add__(self, other: "RoundStats") -> "RoundStats":
        return RoundStats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


class Exchange:
    """One worker's side of the rounds of one job (not thread-safe: one per worker)."""

    def __init__(self, space: BlobSpace, job_id: str, worker_id: int, config: ExchangeConfig, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        whole_number(worker_id, "worker_id", low=0, high=config.workers - 1,
                     must=f"an integer 0 to {config.workers - 1}")
        self.space, self.job_id, self.worker_id, self.config = space, job_id, worker_id, config
        self.merged_slots = merged_slots(space)  # chosen once: the space's own, or its ordinary objects
        self.clock, self.sleep = clock, sleep
        self.slices = config.workers if config.pattern == "reduce_scatter" else 1
        self.keep = BACKUP_KEEP_ROUNDS if config.backup else 2  # rounds whose objects stay readable

    def merger(self, slice_index: int) -> int:
        """The worker that merges slice `slice_index` (and writes its merged object)."""
        return slice_index if self.config.pattern == "reduce_scatter" else 0

    def all_reduce(self, round_no: int, vector: np.ndarray) -> tuple[np.ndarray, RoundStats]:
        """Round `round_no`'s merge of every worker's `vector` (a new float32 array) and what it cost."""
        whole_number(round_no, "round", low=0)
        if not isinstance(vector, np.ndarray) or vector.dtype != np.float32 or vector.ndim != 1:
            raise ConfigError("vector", f"must be a 1-D float32 array, got {getattr(vector, 'dtype', type(vector))} "
                                        f"{getattr(vector, 'shape', '')}")
        io = _Io(self, round_no)
        self._enter(io, round_no)
        bounds = wire.split(len(vector), self.slices)
        me = self.worker_id
        for s, (offset, count) in enumerate(bounds):
            if self.merger(s) != me:
                io.put(self._piece(PART, round_no, me, s, bounds, len(vector)), vector[offset:offset + count])
        merged = {s: self._merge(io, s, bounds, vector) for s in range(self.slices) if self.merger(s) == me}
        others = {s: self._piece(MERGED, round_no, self.merger(s), s, bounds, len(vector))
                  for s in range(self.slices) if s not in merged}
        merged.update(io.wait(others, "the merged slices"))
        result = np.concatenate([merged[s] for s in range(self.slices)]).astype(np.float32, copy=False)
        if self.config.backup and self.merger(0) != me:
            io.late = int(me not in io.get_members())
        return result, io.stats()

    def merged_if_ready(self, round_no: int, length: int) -> tuple[np.ndarray, RoundStats] | None:
        """Backup workers: round `round_no`'s merged vector (of `length` values) if it is merged already (the worker
        then skips computing it: its contribution would be dropped), else None. Never waits."""
        io = _Io(self, round_no)
        piece = self._piece(MERGED, round_no, self.merger(0), 0, wire.split(length, 1), length)
        merged = io.get(piece)
        if merged is None:
            return None
        self._enter(io, round_no)
        io.late = 1
        return merged, io.stats()

    def _enter(self, io: "_Io", round_no: int) -> None:
        """Clear this worker's objects of the round `keep` rounds back (see the module docstring)."""
        if round_no >= self.keep:
            self._clear(io, round_no - self.keep)

    def _merge(self, io: "_Io", s: int, bounds, vector: np.ndarray) -> np.ndarray:
        """Slice s merged: the stored one when a previous entry of this round wrote it, else merged and written."""
        round_no, total, me = io.round_no, len(vector), self.worker_id
        target = self._piece(MERGED, round_no, me, s, bounds, total)
        done = io.get(target)
        if done is not None:  # merged by a previous entry of this round: its members are counted here
            io.merged = len(io.get_members()) if self.config.backup else 0
            return done
        others = {w: self._piece(PART, round_no, w, s, bounds, total) for w in range(self.config.workers) if w != me}
        parts = io.wait(others, "the contributions", at_least=len(others) - self.config.backup)
        members = sorted([me, *parts])
        offset, count = bounds[s]
        acc = np.zeros(count, dtype=np.float64)
        for w in members:
            acc += vector[offset:offset + count] if w == me else parts[w]
        if self.config.op == "mean":
            acc /= len(members)
        out = acc.astype(np.float32)
        if self.config.backup:
            io.put_members(members)  # before the merged object: whoever reads that finds its members
            io.merged = len(members)
        if io.put(target, out):
            return out
        return io.wait({me: target}, "the merged slice another entry of this round wrote first")[me]

    def _clear(self, io: "_Io", round_no: int) -> None:
        """Overwrite with b"" the objects this worker wrote in `round_no` (see the module docstring)."""
        for s in range(self.slices):
            kind = MERGED if self.merger(s) == self.worker_id else PART
            io.clear(Piece(kind, round_no, self.worker_id, s, self.slices, 0, 0, 0))
        if self.config.backup and self.merger(0) == self.worker_id:
            io.clear_blob(keys.round_members_name(self.config.tag, round_no))

    def _piece(self, kind: bytes, round_no: int, writer: int, s: int, bounds, total: int) -> Piece:
        offset, count = bounds[s]
        return Piece(kind, round_no, writer, s, self.slices, total, offset, count)


class _Io:
    """One round's reads, writes and waits of one worker, counted as they happen."""

    def __init__(self, exchange: Exchange, round_no: int):
        self.ex, self.round_no = exchange, round_no
        self.deadline = exchange.clock() + exchange.config.round_timeout_s
        self.written = self.read = self.puts = self.gets = self.merged = self.late = 0
        self.wait_s = 0.0

    def put(self, piece: Piece, values: np.ndarray) -> bool:
        """Write a piece; False when it is a merged slice that another write stored first (kept: see above)."""
        data, name, ex = wire.encode(piece, values), piece.name(self.ex.config.tag), self.ex
        self.puts += 1
        if piece.kind == MERGED and not ex.merged_slots.put_merged(ex.job_id, name, data):
            return False
        if piece.kind != MERGED:
            ex.space.put_blob(ex.job_id, name, data)
        self.written += len(data)
        return True

    def clear(self, piece: Piece) -> None:
        name, ex = piece.name(self.ex.config.tag), self.ex
        if piece.kind == MERGED:
            ex.merged_slots.clear_merged(ex.job_id, name)
        else:
            ex.space.put_blob(ex.job_id, name, wire.CLEARED)
        self.puts += 1

    def clear_blob(self, name: str) -> None:
        """Overwrite an object that is not a piece (a round's members) with b""."""
        self.ex.space.put_blob(self.ex.job_id, name, wire.CLEARED)
        self.puts += 1

    def get(self, piece: Piece) -> np.ndarray | None:
        name, ex = piece.name(self.ex.config.tag), self.ex
        raw = ex.merged_slots.get_merged(ex.job_id, name) if piece.kind == MERGED else ex.space.get_blob(ex.job_id, name)
        self.gets += 1
        if raw is None:
            return None
        self.read += len(raw)
        return wire.decode(raw, piece, name)

    def wait(self, pieces: dict[int, Piece], what: str, at_least: int | None = None) -> dict[int, np.ndarray]:
        """The pieces' values once `at_least` of them (default: all) are there, every one there by then; polls the
        missing ones until the round's deadline (then RoundTimeout)."""
        clock, cfg = self.ex.clock, self.ex.config
        start, pause = clock(), cfg.poll_s
        missing, got = dict(pieces), {}
        enough = len(pieces) if at_least is None else at_least
        try:
            while True:
                for key, piece in list(missing.items()):
                    values = self.get(piece)
                    if values is not None:
                        got[key] = values
                        del missing[key]
                if len(got) >= enough:
                    return got
                now = clock()
                if now >= self.deadline:
                    raise RoundTimeout(self.round_no, sorted(p.writer for p in missing.values()), what, now - start)
                self.ex.sleep(min(pause, self.deadline - now))
                pause = min(2 * pause, cfg.poll_max_s)
        finally:
            self.wait_s += clock() - start

    def put_members(self, members: list[int]) -> None:
        data = json.dumps(members).encode()
        self.ex.space.put_blob(self.ex.job_id, keys.round_members_name(self.ex.config.tag, self.round_no), data)
        self.written += len(data)
        self.puts += 1

    def get_members(self) -> list[int]:
        """The workers whose contributions round `round_no` merged (written before its merged object)."""
        name = keys.round_members_name(self.ex.config.tag, self.round_no)
        raw = self.ex.space.get_blob(self.ex.job_id, name)
        self.gets += 1
        if not raw:
            raise RoundDataError(self.round_no, name, self.ex.merger(0), f"{'missing' if raw is None else 'cleared'}: "
                                 f"a worker more than {self.ex.keep} rounds behind reads a cleared round")
        self.read += len(raw)
        return [int(worker) for worker in json.loads(raw)]

    def stats(self) -> RoundStats:
        return RoundStats(1, self.written, self.read, self.puts, self.gets, self.wait_s, self.merged, self.late)
