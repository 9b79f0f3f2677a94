"""`faasgd train`'s summary: one cost line, from the result's billing figures at the default prices."""

import io

from rich.console import Console

from faasgd import cost
from faasgd.cli.progress import cost_lines, print_summary
from faasgd.job.result import missing


def summary_text(result: dict) -> str:
    buffer = io.StringIO()
    print_summary(result, None, Console(file=buffer, width=200, force_terminal=False))
    return buffer.getvalue()


def test_the_summary_prints_one_cost_line_with_what_was_billed():
    records = [{"invocations": 2, "billed_s": 3.0, "billed_gb_s": 3.0, "memory_mb": 1024.0, "cold_starts": 1}]
    extra = [{"billed_s": 1.0, "memory_mb": 1024.0, "cold": False, "duplicate": True}]
    result = {**missing("j1", "x"), "state": "done", "error": None, **cost.job_figures(records, extra, 36.0)}
    prices = cost.Prices()
    faas = 4.0 * prices.gb_s + 3 * prices.request
    lines = [line for line in summary_text(result).splitlines() if line.startswith("cost ")]
    assert len(lines) == 1
    line = lines[0]
    assert f"${faas + prices.store_hour * 36 / 3600:,.7f}" in line and f"FaaS ${faas:,.7f}" in line
    assert "4.000 GB-s at 1,024 MB, 3 requests, 1 cold starts, 1 duplicates" in line
    assert f"store ${prices.store_hour * 36 / 3600:,.7f}" in line


def test_an_unknown_memory_limit_says_so_and_a_result_without_billing_prints_no_cost_line():
    figures = cost.job_figures([{"invocations": 1, "billed_s": 2.0, "memory_mb": None}], (), 10.0)
    (line,) = cost_lines({**missing("j", "x"), **figures})
    assert line.startswith("cost             unknown   FaaS unknown (GB-s unknown (no memory_limit)")
    assert cost_lines(missing("j", "x")) == []



def test_the_summary_says_where_the_workers_time_went_from_their_records():
    from faasgd.job.result import time_split

    records = [{"time_split": {"compute": 3.0, "batches": 0.5, "eval": 1.0, "load": 0.5}, "comm_wait_s": 1.0,
                "intervals": [[10.0, 14.0], [20.0, 22.0]]},
               {"time_split": {"compute": 1.0}, "comm_wait_s": 0.0, "intervals": [[10.0, 12.0]]}]
    result = {**missing("j1", "x"), "state": "done", "error": None, **time_split(records)}
    assert result["worker_s"] == 8.0 and result["compute_share"] == 0.5
    (line,) = [line for line in summary_text(result).splitlines() if line.startswith("workers' time")]
    assert "8.0 worker-s: steps 50%   minibatches 6%   evaluation 12%   loading 6%   waiting 12%   rest 12%" in line
    assert not [line for line in summary_text(missing("j", "x")).splitlines() if line.startswith("workers' time")]
