"""The async queue's delivery rules, one place for both modes: when a call is retried, how long
its backoff is, when it is given up, and whose answer goes to the X-Callback-Url.

`ce` is OpenFaaS Community Edition's nats-queue-worker (openfaas/nats-queue-worker `main.go`):
every delivery's answer is final, 5xx included (a call the gateway could not deliver is posted to
the callback with its status, 503 when there was no answer at all), one call in flight per queue
worker, and a call not acked within ack_wait is delivered again with the same X-Call-Id.

`pro` is OpenFaaS Pro's JetStream queue-worker as the faas-netes chart configures it
(`queueWorkerPro`: httpRetryCodes 408,429,500,502,503,504, initialRetryWait 10s, maxRetryWait
120s, maxRetryAttempts 100, maxInflight 50): a delivery ending with one of those statuses is
delivered again after initial * 2^(n-1) seconds, capped at the max wait, until the attempts run
out; several calls in flight per queue worker.

Where this departs from OpenFaaS, and why:
* Pro's waits are scaled down for one machine (0.5 s first, 10 s at most, 10 attempts, 5 in flight
  per queue worker): a replica that died is replaced within seconds here, not minutes. All four
  are flags of `faasgd up`. Pro's own backoff formula is not public; ours has no jitter.
* `ce` caps deliveries too (5, ack_wait redeliveries included), where NATS Streaming redelivers
  for ever: a call that never finishes within ack_wait must still end, as every job must.
* A failing copy of a call that another delivery already answered posts nothing in `pro` (that
  call is done); `ce` posts every delivery's answer, as its queue-worker does.
* In both modes the attempt count restarts when a new runtime takes the queue over (see
  queue/jetstream.py): the restart delivers the calls its predecessor left in flight.

`Chaos` (flag `--chaos`, for fault studies, off by default) breaks delivery on purpose the two ways
a cluster does: `drop:FN:N` answers the first N deliveries of function FN with 502 without calling
it (a call that landed on a pod that was not ready, or whose connection was cut: CE ends the call
there); `duplicate:FN` delivers every call of FN twice at once (a redelivery after ack_wait that
overlaps the first delivery); only the first copy's answer counts. A third kind slows rather than breaks:
`slow:FN:FACTOR[:WORKER]` adds the header X-Chaos-Slow: FACTOR[:WORKER] (faasgd.openfaas.CHAOS_SLOW_HEADER) to every
delivery of FN (a straggler: a slower node, a noisy neighbour). The runtime knows no workers: the function reads the
header and the worker it names (every one without WORKER) sleeps (FACTOR - 1) x each step's time after it
(faasgd.worker.straggler).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field

from faasgd.checks import whole_number
from faasgd.errors import ConfigError

MODES = ("ce", "pro")
RETRY_CODES = frozenset({408, 429, 500, 502, 503, 504})  # Pro's httpRetryCodes; also what counts as `failed`
DEFAULTS = {  # per mode: None means the mode has no such setting
    "ce": {"max_attempts": 5, "retry_wait_s": None, "max_retry_wait_s": None, "max_inflight": 1},
    "pro": {"max_attempts": 10, "retry_wait_s": 0.5, "max_retry_wait_s": 10.0, "max_inflight": 5},
}
_FLAGS = {"max_attempts": "--max-attempts", "retry_wait_s": "--retry-wait", "max_retry_wait_s": "--max-retry-wait",
          "max_inflight": "--max-inflight"}


@dataclass(frozen=True)
class DeliveryPolicy:
    """How the queue delivers: `mode` and its settings; a setting left None takes the mode's default."""

    mode: str = "ce"  # "ce" (Community Edition) or "pro" (OpenFaaS Pro's JetStream queue-worker)
    max_attempts: int | None = None  # deliveries per call at most, ack_wait redeliveries included
    retry_wait_s: float | None = None  # pro: the wait before the first retry, doubled at each retry
    max_retry_wait_s: float | None = None  # pro: the longest wait between retries
    max_inflight: int | None = None  # calls in flight per queue worker (ce: always 1)
    retry_codes: frozenset[int] = field(default=RETRY_CODES)  # pro: statuses that are retried
    chaos: Chaos = field(default_factory=lambda: Chaos())  # deliveries broken on purpose (fault studies)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError("delivery", f"must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name, default in DEFAULTS[self.mode].items():
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, default)
            elif default is None or (self.mode == "ce" and name == "max_inflight" and value != 1):
                raise ConfigError(name, f"Community Edition's queue-worker has no {_FLAGS[name]} "
                                        f"(retries and concurrency are OpenFaaS Pro's): use --delivery pro")
        for name in ("max_attempts", "max_inflight"):
            whole_number(getattr(self, name), name, low=1)
        if self.mode == "pro":
            if not 0 < self.retry_wait_s <= self.max_retry_wait_s:
                raise ConfigError("retry_wait_s", f"must be > 0 and <= max_retry_wait_s ({self.max_retry_wait_s!r}), "
                                                  f"got {self.retry_wait_s!r}")

    def to_json(self) -> dict:
        """What state.json records."""
        return {**asdict(self), "retry_codes": sorted(self.retry_codes), "chaos": self.chaos.to_argv()}

    def to_argv(self) -> list[str]:
        """The flags that give this policy to `python -m faasgd.local.lifecycle.daemon`."""
        argv = ["--delivery", self.mode]
        for name, flag in _FLAGS.items():
            if DEFAULTS[self.mode][name] is not None:
                argv += [flag, str(getattr(self, name))]
        for rule in self.chaos.to_argv():
            argv += ["--chaos", rule]
        return argv


@dataclass(frozen=True)
class Chaos:
    """Deliveries broken on purpose: `drop` maps a function to how many of its first deliveries answer
    502 without reaching it; every call of a function in `duplicate` is delivered twice at once; every delivery of a
    function in `slow` carries its X-Chaos-Slow value."""

    drop: tuple[tuple[str, int], ...] = ()
    duplicate: frozenset[str] = frozenset()
    slow: tuple[tuple[str, str], ...] = ()  # (function, the X-Chaos-Slow value its deliveries carry: FACTOR[:WORKER])

    @classmethod
    def parse(cls, rules: list[str] | None) -> Chaos:
        """From `--chaos` values (drop:FN:N, duplicate:FN, slow:FN:FACTOR[:WORKER]); raises ConfigError naming a bad
        one."""
        drop: dict[str, int] = {}
        duplicate: set[str] = set()
        slow: dict[str, str] = {}
        for rule in rules or []:
            kind, _, rest = rule.partition(":")
            name, _, count = rest.partition(":")
            if kind == "drop" and name and count.isdigit() and int(count) >= 1:
                drop[name] = drop.get(name, 0) + int(count)
            elif kind == "duplicate" and name and not count:
                duplicate.add(name)
            elif kind == "slow" and name and name not in slow and slow_value(count):
                slow[name] = slow_value(count)
            else:
                raise ConfigError("chaos", f"expected drop:FUNCTION:N (N >= 1), duplicate:FUNCTION or "
                                           f"slow:FUNCTION:FACTOR[:WORKER] (1 <= FACTOR <= 100, WORKER >= 0; one a "
                                           f"function), got {rule!r}")
        return cls(tuple(sorted(drop.items())), frozenset(duplicate), tuple(sorted(slow.items())))

    def to_argv(self) -> list[str]:
        """The `--chaos` values that give these rules."""
        return [f"drop:{name}:{count}" for name, count in self.drop] + \
            [f"duplicate:{name}" for name in sorted(self.duplicate)] + [f"slow:{name}:{value}" for name, value in self.slow]


def slow_value(text: str) -> str:
    """FACTOR[:WORKER] of a slow rule as its header carries it (the factor as given), or "" when it is not one."""
    factor, _, worker = text.partition(":")
    try:
        if not 1.0 <= float(factor) <= 100.0:
            return ""
    except ValueError:
        return ""
    if worker and not worker.isdigit():
        return ""
    return text


@dataclass(frozen=True)
class Outcome:
    """What to do with a call after one delivery."""

    retry_in_s: float | None  # deliver it again after this many seconds; None: the call is done (acked)
    callback: bool  # post this delivery's answer to the call's X-Callback-Url
    failed: bool  # the call ends with a status in RETRY_CODES (retries, if any, ran out)


def decide(policy: DeliveryPolicy, status: int, attempt: int, answered: bool) -> Outcome:
    """The rule for a delivery that ended with `status`; `attempt` counts from 1, redeliveries included.

    `answered`: another delivery of this call already ended it (a duplicate after ack_wait).
    """
    failing = status in RETRY_CODES
    if policy.mode == "ce":
        return Outcome(None, callback=True, failed=failing and not answered)
    retryable = status in policy.retry_codes
    if answered:
        return Outcome(None, callback=not retryable, failed=False)
    if retryable and attempt < policy.max_attempts:
        return Outcome(backoff(policy, attempt), callback=False, failed=False)
    return Outcome(None, callback=True, failed=failing)


def backoff(policy: DeliveryPolicy, attempt: int) -> float:
    """Seconds before delivering again after failed attempt `attempt` (1, 2, ...): doubling, capped."""
    return min(policy.max_retry_wait_s, policy.retry_wait_s * 2 ** (attempt - 1))


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The delivery flags of `faasgd up` (and of the daemon it starts)."""
    parser.add_argument("--delivery", choices=MODES, default="ce",
                        help="async calls as OpenFaaS Community Edition (ce: no retries, one call per queue "
                             "worker) or OpenFaaS Pro (pro: retries with backoff, several in flight); default ce")
    parser.add_argument("--max-attempts", type=int, default=None,
                        help="deliveries per async call at most, redeliveries included (ce 5, pro 10)")
    parser.add_argument("--retry-wait", type=float, default=None, help="pro: seconds before the first retry (0.5)")
    parser.add_argument("--max-retry-wait", type=float, default=None, help="pro: longest wait between retries (10)")
    parser.add_argument("--max-inflight", type=int, default=None, help="pro: calls in flight per queue worker (5)")
    parser.add_argument("--chaos", action="append", metavar="RULE",
                        help="break delivery on purpose, for fault studies (repeatable): drop:FUNCTION:N answers "
                             "its first N deliveries 502 unsent; duplicate:FUNCTION delivers each call twice at once; "
                             "slow:FUNCTION:FACTOR[:WORKER] slows the worker named (every one without WORKER) by FACTOR")


def from_flags(args: argparse.Namespace) -> DeliveryPolicy:
    """The policy the flags of `add_flags` give; raises ConfigError naming a bad one."""
    return DeliveryPolicy(args.delivery, args.max_attempts, args.retry_wait, args.max_retry_wait, args.max_inflight,
                          chaos=Chaos.parse(args.chaos))
