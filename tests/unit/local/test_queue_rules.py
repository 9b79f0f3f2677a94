"""The delivery rules of `ce` and `pro` as a table (faasgd.local.queue.rules), the policy's
defaults and validation, and the flags that carry it from `faasgd up` to the daemon."""

from __future__ import annotations

import argparse

import pytest

from faasgd.errors import ConfigError
from faasgd.local.queue.rules import Chaos, DeliveryPolicy, Outcome, RETRY_CODES, add_flags, backoff, decide, from_flags

CE, PRO = DeliveryPolicy(), DeliveryPolicy("pro")


def test_defaults_follow_openfaas_scaled_down_for_one_machine():
    assert (CE.mode, CE.max_attempts, CE.max_inflight, CE.retry_wait_s, CE.max_retry_wait_s) == ("ce", 5, 1, None, None)
    assert (PRO.max_attempts, PRO.max_inflight, PRO.retry_wait_s, PRO.max_retry_wait_s) == (10, 5, 0.5, 10.0)
    assert RETRY_CODES == {408, 429, 500, 502, 503, 504}  # faas-netes chart queueWorkerPro.httpRetryCodes


@pytest.mark.parametrize("status", [200, 202, 400, 404, 408, 429, 500, 502, 503, 504])
def test_ce_never_retries_and_posts_every_answer(status):
    for attempt in (1, 4, 5):
        assert decide(CE, status, attempt, answered=False) == Outcome(None, True, status in RETRY_CODES)
    assert decide(CE, status, 2, answered=True) == Outcome(None, True, False)  # a duplicate's answer is posted too


@pytest.mark.parametrize("status", sorted(RETRY_CODES))
def test_pro_retries_its_retry_codes_until_the_last_attempt(status):
    assert decide(PRO, status, 1, answered=False) == Outcome(0.5, False, False)
    assert decide(PRO, status, 9, answered=False) == Outcome(10.0, False, False)
    assert decide(PRO, status, 10, answered=False) == Outcome(None, True, True)  # given up: the callback says so


@pytest.mark.parametrize("status", [200, 201, 400, 401, 404, 409, 501, 505])
def test_pro_posts_other_statuses_at_once(status):
    assert decide(PRO, status, 1, answered=False) == Outcome(None, True, False)


def test_pro_drops_a_failing_duplicate_of_an_answered_call_but_posts_a_good_one():
    assert decide(PRO, 503, 2, answered=True) == Outcome(None, False, False)
    assert decide(PRO, 200, 2, answered=True) == Outcome(None, True, False)


def test_pro_retry_codes_can_be_narrowed():
    policy = DeliveryPolicy("pro", retry_codes=frozenset({503}))
    assert decide(policy, 503, 1, False).retry_in_s == 0.5 and decide(policy, 502, 1, False).retry_in_s is None


def test_backoff_doubles_from_the_first_wait_and_is_capped():
    waits = [backoff(PRO, attempt) for attempt in range(1, 10)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0]
    slow = DeliveryPolicy("pro", retry_wait_s=10, max_retry_wait_s=120, max_attempts=100)  # the chart's own values
    assert [backoff(slow, n) for n in (1, 4, 5, 99)] == [10, 80, 120, 120]


@pytest.mark.parametrize("settings, field", [
    ({"mode": "standard"}, "delivery"),
    ({"retry_wait_s": 1.0}, "retry_wait_s"),  # ce has no retries
    ({"max_retry_wait_s": 1.0}, "max_retry_wait_s"),
    ({"max_inflight": 2}, "max_inflight"),  # nor concurrency
    ({"max_attempts": 0}, "max_attempts"),
    ({"mode": "pro", "max_inflight": 0}, "max_inflight"),
    ({"mode": "pro", "max_attempts": True}, "max_attempts"),
    ({"mode": "pro", "retry_wait_s": 0}, "retry_wait_s"),
    ({"mode": "pro", "retry_wait_s": 20}, "retry_wait_s"),  # above max_retry_wait_s
])
def test_policy_refuses_bad_settings_naming_the_field(settings, field):
    with pytest.raises(ConfigError, match=f"^{field}: "):
        DeliveryPolicy(**settings)


def test_ce_accepts_its_one_call_in_flight_and_fewer_attempts():
    assert DeliveryPolicy("ce", max_attempts=1, max_inflight=1).max_attempts == 1


def test_flags_reach_the_daemon_unchanged():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    assert from_flags(parser.parse_args([])) == CE
    policy = from_flags(parser.parse_args(["--delivery", "pro", "--max-attempts", "3", "--retry-wait", "0.2",
                                           "--max-retry-wait", "2", "--max-inflight", "7"]))
    assert (policy.max_attempts, policy.retry_wait_s, policy.max_retry_wait_s, policy.max_inflight) == (3, 0.2, 2.0, 7)
    for sent in (CE, PRO, policy):
        assert from_flags(parser.parse_args(sent.to_argv())) == sent
    assert PRO.to_json()["retry_codes"] == [408, 429, 500, 502, 503, 504]
    with pytest.raises(ConfigError, match="^retry_wait_s: .*--delivery pro"):
        from_flags(parser.parse_args(["--retry-wait", "1"]))


def test_chaos_rules_parse_travel_to_the_daemon_and_refuse_bad_ones_naming_chaos():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    policy = from_flags(parser.parse_args(["--chaos", "drop:emnist-train:2", "--chaos", "duplicate:emnist-train",
                                           "--chaos", "drop:emnist-train:1"]))
    assert policy.chaos == Chaos((("emnist-train", 3),), frozenset({"emnist-train"}))
    assert from_flags(parser.parse_args(policy.to_argv())) == policy
    assert policy.to_json()["chaos"] == ["drop:emnist-train:3", "duplicate:emnist-train"]
    assert CE.chaos == Chaos() and "--chaos" not in CE.to_argv()
    for bad in ("drop:emnist-train", "drop:emnist-train:0", "drop::2", "duplicate:", "duplicate:f:1", "lose:f:1"):
        with pytest.raises(ConfigError, match=f"^chaos: .*{bad!r}"):
            from_flags(parser.parse_args(["--chaos", bad]))


def test_chaos_slow_rules_keep_the_factor_and_worker_the_header_carries_and_refuse_bad_ones_naming_chaos():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    policy = from_flags(parser.parse_args(["--chaos", "slow:emnist-train:4:1", "--chaos", "slow:echo:2.5"]))
    assert policy.chaos.slow == (("echo", "2.5"), ("emnist-train", "4:1"))
    assert from_flags(parser.parse_args(policy.to_argv())) == policy
    assert policy.to_json()["chaos"] == ["slow:echo:2.5", "slow:emnist-train:4:1"]
    for bad in ("slow:emnist-train", "slow:emnist-train:0.5", "slow:emnist-train:101", "slow::2", "slow:f:x",
                "slow:f:2:-1", "slow:f:2:a"):
        with pytest.raises(ConfigError, match=f"^chaos: .*{bad!r}"):
            from_flags(parser.parse_args(["--chaos", bad]))
    with pytest.raises(ConfigError, match="^chaos: .*one a function"):  # two factors for one function: which?
        from_flags(parser.parse_args(["--chaos", "slow:f:2", "--chaos", "slow:f:4"]))
