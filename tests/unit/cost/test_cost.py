"""Cost per run (faasgd.cost): usage from worker records and extra calls, money by hand, prices and their errors."""

from __future__ import annotations

import pytest

from faasgd import cost
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError
from faasgd.job.result import MEASURES, RESULT_KEYS, Outcome, build_result


def worker(invocations, billed_s, memory_mb, cold, **more):
    """A final worker record with the billing fields its calls wrote (worker/progress.py)."""
    gb_s = 0.0 if memory_mb is None else billed_s * memory_mb / 1024
    return {"state": "finished", "invocations": invocations, "billed_s": billed_s, "billed_gb_s": gb_s,
            "memory_mb": memory_mb, "cold_starts": cold, **more}


# A known job: two workers at 1 GiB (3 calls, 2.5 s; 1 call, 4 s), emnist-setup's call (0.25 s at 1 GiB, cold) and
# one duplicate delivery (0.5 s at 1 GiB, warm); 20 s of wall time.
WORKERS = {0: worker(3, 2.5, 1024.0, 1), 1: worker(1, 4.0, 1024.0, 1)}
EXTRA = [{"billed_s": 0.25, "memory_mb": 1024.0, "cold": True, "duplicate": False},
         {"billed_s": 0.5, "memory_mb": 1024.0, "cold": False, "duplicate": True}]
PRICES = cost.Prices(gb_s=0.00002, request=0.0000005, store_hour=0.036)


def test_usage_of_a_known_job_by_hand():
    figures = cost.usage(WORKERS.values(), EXTRA)
    assert set(figures) == set(cost.USAGE)
    assert figures["requests"] == 3 + 1 + 2
    assert figures["billed_s"] == pytest.approx(2.5 + 4.0 + 0.25 + 0.5)
    assert figures["billed_gb_s"] == pytest.approx(7.25)  # every call at 1 GB
    assert figures["memory_mb"] == 1024.0
    assert figures["cold_starts"] == 3 and figures["duplicate_calls"] == 1


def test_money_of_a_known_job_by_hand():
    money = cost.job_cost(cost.usage(WORKERS.values(), EXTRA), 20.0, PRICES)
    assert set(money) == set(cost.COST)
    assert money["cost_faas_usd"] == pytest.approx(7.25 * 0.00002 + 6 * 0.0000005)  # 0.000148
    assert money["cost_store_usd"] == pytest.approx(0.036 * 20 / 3600)  # 0.0002
    assert money["cost_usd"] == pytest.approx(0.000148 + 0.0002)


def test_memory_is_billed_in_gigabytes_of_1024_megabytes():
    figures = cost.usage([worker(2, 3.0, 512.0, 0)], [{"billed_s": 1.0, "memory_mb": 256.0}])
    assert figures["billed_gb_s"] == pytest.approx(3.0 * 0.5 + 1.0 * 0.25)
    assert figures["memory_mb"] == 512.0  # the largest limit a call was billed at


def test_a_call_without_a_memory_limit_leaves_gb_seconds_and_money_unknown_not_zero():
    figures = cost.usage([worker(1, 2.0, None, 1)])
    assert figures["billed_gb_s"] is None and figures["memory_mb"] is None and figures["billed_s"] == 2.0
    money = cost.job_cost(figures, 10.0, PRICES)
    assert money["cost_faas_usd"] is None and money["cost_usd"] is None
    assert money["cost_store_usd"] == pytest.approx(0.036 * 10 / 3600)
    assert cost.job_cost(cost.usage(WORKERS.values()), None, PRICES)["cost_usd"] is None  # no wall time


def test_records_from_before_billing_count_their_calls_but_no_gb_seconds():
    figures = cost.usage([{"state": "finished", "invocations": 2}, None])
    assert figures["requests"] == 2 and figures["billed_s"] == 0.0 and figures["billed_gb_s"] is None


def test_default_prices_are_aws_lambda_x86_and_a_small_store_node():
    prices = cost.Prices()
    assert prices.gb_s == pytest.approx(0.0000166667) and prices.request == pytest.approx(0.2e-6)
    assert prices.store_hour == pytest.approx(0.017)
    assert "per GB-second" in prices.describe() and "0.2 per million requests" in prices.describe()


def test_prices_parse_from_a_mapping_and_from_flags():
    assert cost.Prices.parse({"gb_s": "0.0000133", "store_hour": 0}) == \
        cost.Prices(gb_s=0.0000133, store_hour=0.0)
    assert cost.Prices.from_assignments(["request=1e-6", " gb_s = 2e-5 "]) == cost.Prices(gb_s=2e-5, request=1e-6)
    assert cost.Prices.parse(None) == cost.Prices()


@pytest.mark.parametrize("values, field", [
    ({"gb_seconds": 1}, "prices.gb_seconds"),  # unknown key
    ({"gb_s": -1}, "prices.gb_s"),
    ({"request": "cheap"}, "prices.request"),
    ({"store_hour": float("nan")}, "prices.store_hour"),
    ({"store_hour": True}, "prices.store_hour"),
    ([("gb_s", 1)], "prices"),  # not a mapping
])
def test_a_bad_price_is_an_error_naming_the_field(values, field):
    with pytest.raises(ConfigError) as raised:
        cost.Prices.parse(values)
    assert raised.value.field == field and str(raised.value).startswith(f"{field}: ")


@pytest.mark.parametrize("items, field", [(["gb_s"], "--price"), (["=1"], "--price"), (["gb_s=x"], "--price.gb_s"),
                                          (["watts=1"], "--price.watts")])
def test_a_bad_price_flag_names_the_flag(items, field):
    with pytest.raises(ConfigError) as raised:
        cost.Prices.from_assignments(items)
    assert raised.value.field == field


def test_the_result_has_every_cost_key_at_the_default_prices():
    config = TrainConfig(number_of_workers=2, target_accuracy=0.9)
    progress = {i: {**r, "samples": 100, "intervals": [[1000.0, 1010.0 - i]]} for i, r in WORKERS.items()}
    meta = {"job_id": "j", "created_at": 1000.0, "train_rows": 200}
    result = build_result(config, meta, progress, None, Outcome(now=1020.0, extra_calls=EXTRA))
    assert set(cost.MEASURES) <= set(MEASURES) and set(cost.MEASURES) <= set(RESULT_KEYS)
    prices = cost.Prices()
    assert result["requests"] == 6 and result["billed_gb_s"] == pytest.approx(7.25) and result["cold_starts"] == 3
    assert result["cost_faas_usd"] == pytest.approx(7.25 * prices.gb_s + 6 * prices.request)
    assert result["cost_store_usd"] == pytest.approx(prices.store_hour * result["wall_s"] / 3600)
    assert result["wall_s"] == pytest.approx(10.0)
    without = build_result(config, meta, progress, None, Outcome(now=1020.0))  # no extra calls: the workers' alone
    assert without["requests"] == 4 and without["duplicate_calls"] == 0


def test_reprice_uses_a_recorded_runs_usage_and_wall_time():
    run = {**cost.usage(WORKERS.values(), EXTRA), "wall_s": 20.0}
    assert cost.reprice(run, PRICES) == cost.job_cost(run, 20.0, PRICES)
    assert cost.reprice(run, cost.Prices(gb_s=0, request=0, store_hour=0))["cost_usd"] == 0.0
