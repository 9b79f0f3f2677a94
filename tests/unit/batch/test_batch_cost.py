"""Cost per run in test.sh: a matrix's `prices:`, runs priced at them, runs.csv's round trip, summary.md's columns."""

from __future__ import annotations

import csv
import json

import httpx
import pytest

from faasgd import cost
from faasgd.batch.matrix import parse_matrix_text
from faasgd.batch.report import summarize, write_runs_csv, write_summary_md
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import Target
from faasgd.errors import ConfigError
from faasgd.openfaas import GatewayClient

MATRIX = """
name: priced
rounds: 2
fixed: {dataset: synthetic, max_epochs: 1}
matrix:
  number_of_workers: [1, 2]
prices: {gb_s: 0.00002, request: 0.0000005, store_hour: 0.036}
"""
PRICES = cost.Prices(gb_s=0.00002, request=0.0000005, store_hour=0.036)


def result_of(workers: int) -> dict:
    """A job's result at the default prices: each worker billed 2 s at 1 GiB in one cold call, 10 s of wall time."""
    records = [{"invocations": 1, "billed_s": 2.0, "billed_gb_s": 2.0, "memory_mb": 1024.0, "cold_starts": 1}] * workers
    return {"state": "done", "error": None, "wall_s": 10.0, "reached_target": False, "samples": 100 * workers,
            **cost.job_figures(records, [{"billed_s": 0.5, "memory_mb": 1024.0, "cold": True}], 10.0)}


class FakeGateway(Target):
    """emnist-setup answering at once: a job per call, done, with result_of(its workers)."""

    name = "fake"

    def __init__(self):
        self.workers: dict[str, int] = {}
        self.gateway = GatewayClient("http://gateway.test", transport=httpx.MockTransport(self.answer))

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            job_id = f"j{len(self.workers)}"
            self.workers[job_id] = int(json.loads(request.content)["number_of_workers"])
            return httpx.Response(200, json={"job_id": job_id, "status_query": {"job_id": job_id}})
        job_id = request.url.params["job_id"]
        return httpx.Response(200, json={"state": "done", "result": result_of(self.workers[job_id]), "created_at": 0.0,
                                         "workers": [{"replicas": ["emnist-train-1"]}] * self.workers[job_id]})


@pytest.fixture(scope="module")
def runs():
    matrix = parse_matrix_text(MATRIX, "m")
    return run_batch(matrix, FakeGateway(), matrix.rounds, 5.0, lambda line: None)


def test_a_matrix_sets_prices_and_a_bad_one_is_an_error_naming_it():
    assert parse_matrix_text(MATRIX, "m").prices == PRICES
    assert parse_matrix_text(MATRIX.replace("prices: {gb_s: 0.00002, ", "prices: {"), "m").prices.gb_s == \
        cost.Prices().gb_s  # the others default
    with pytest.raises(ConfigError) as raised:
        parse_matrix_text(MATRIX.replace("gb_s: 0.00002", "gb_s: free"), "m")
    assert raised.value.field == "prices.gb_s"
    with pytest.raises(ConfigError) as raised:
        parse_matrix_text(MATRIX.replace("gb_s:", "vcpu_s:"), "m")
    assert raised.value.field == "prices.vcpu_s"


def test_runs_are_priced_at_the_matrixs_prices_by_hand(runs):
    two = [run for run in runs if run["config"]["number_of_workers"] == 2]
    assert len(two) == 2
    for run in two:  # 2 workers x 2 s + setup's 0.5 s, all at 1 GB; 3 requests; 10 s of a store host
        assert run["billed_gb_s"] == pytest.approx(4.5) and run["requests"] == 3 and run["cold_starts"] == 3
        assert run["cost_faas_usd"] == pytest.approx(4.5 * 0.00002 + 3 * 0.0000005)
        assert run["cost_store_usd"] == pytest.approx(0.036 * 10 / 3600)
        assert run["cost_usd"] == pytest.approx(4.5 * 0.00002 + 3 * 0.0000005 + 0.0001)


def test_runs_csv_round_trips_the_cost_columns(runs, tmp_path):
    write_runs_csv(runs, tmp_path / "runs.csv")
    with open(tmp_path / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for row, run in zip(rows, runs):
        for key in cost.MEASURES:
            assert float(row[key]) == run[key], key  # repr of a float reads back exactly
    assert [int(row["requests"]) for row in rows] == [2, 3, 2, 3]


def test_summary_shows_billing_and_money_per_configuration_and_the_prices(runs, tmp_path):
    summary = {s["configuration"]: s for s in summarize(runs)}
    assert summary["number_of_workers=1"]["cost_usd_mean"] == pytest.approx(2.5 * 0.00002 + 2 * 0.0000005 + 0.0001)
    meta = {"name": "priced", "rounds": 2, "prices": PRICES.to_dict()}
    write_summary_md(runs, meta, tmp_path / "summary.md", {})
    text = (tmp_path / "summary.md").read_text()
    assert "| GB-s | Requests | Cold starts | Cost (USD) |" in text
    assert "| 4.50 | 3.0 | 3.0 | 0.0001915 |" in text  # 0.00009 + 0.0000015 + 0.0001
    assert "$2e-05 per GB-second, $0.5 per million requests, $0.036 per hour" in text
