"""`faasgd results` and cost: recorded costs shown, `--price` prices recorded usage again, bad prices named."""

from __future__ import annotations

import json

import pytest

from faasgd import cost
from faasgd.batch.record import BatchRecord
from faasgd.batch.redact import Redactor
from faasgd.cli.main import main


def priced_run(workers: int, prices: cost.Prices) -> dict:
    """A finished run: each worker billed 3 s at 512 MB in one call, 6 s of wall time, at `prices`."""
    records = [{"invocations": 1, "billed_s": 3.0, "billed_gb_s": 1.5, "memory_mb": 512.0, "cold_starts": 1}] * workers
    return {"config_id": workers, "configuration": f"number_of_workers={workers}", "round": 1, "job_id": f"j{workers}",
            "state": "done", "error": None, "store": "redis", "config": {"number_of_workers": workers},
            "varying": {"number_of_workers": workers}, "wall_s": 6.0, "time_to_target_s": 5.0,
            **cost.job_figures(records, (), 6.0, prices), "placement": ["emnist-train-1"]}


@pytest.fixture
def db(tmp_path):
    """Two batches of the same runs, the second priced at its matrix's 10x store price."""
    path = tmp_path / "r.sqlite"
    for name, prices in (("aws", cost.Prices()), ("dear", cost.Prices(store_hour=0.17))):
        record = BatchRecord(str(path), {"name": name, "target": "local"}, Redactor(), lambda *a, **k: None)
        for index, workers in enumerate((1, 2), start=1):
            record.run(index, priced_run(workers, prices))
        record.finish({"name": name})
    return str(path)


def runs_json(db, capsys, *argv) -> list[dict]:
    assert main(["results", "--db", db, "runs", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_show_the_costs_their_batch_recorded(db, capsys):
    found = runs_json(db, capsys, "--batch", "2", "--where", "number_of_workers=2")
    (run,) = found
    assert run["billed_gb_s"] == 3.0 and run["requests"] == 2 and run["cold_starts"] == 2
    assert run["cost_store_usd"] == pytest.approx(0.17 * 6 / 3600)
    assert main(["results", "--db", db, "runs"]) == 0
    table = capsys.readouterr().out
    assert "GB-s" in table and "cost USD" in table


def test_price_flags_price_every_runs_usage_again_by_hand(db, capsys):
    for run in runs_json(db, capsys, "--price", "gb_s=0.0001", "--price", "request=0.001", "--price", "store_hour=0"):
        workers = run["number_of_workers"]
        assert run["cost_faas_usd"] == pytest.approx(1.5 * workers * 0.0001 + workers * 0.001)
        assert run["cost_usd"] == run["cost_faas_usd"] and run["cost_store_usd"] == 0.0


def test_compare_shows_cost_by_default_and_at_one_price_both_batches_agree(db, capsys):
    assert main(["results", "--db", db, "compare", "1", "2", "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["number_of_workers=1"]["cost_usd"]["ratio"] > 1  # the second batch's dearer store
    assert main(["results", "--db", db, "compare", "1", "2", "--measure", "cost_usd", "--price", "store_hour=0.017",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(row["cost_usd"]["ratio"] == pytest.approx(1.0) for row in rows)


@pytest.mark.parametrize("flag, field", [("gb_s", "--price"), ("gb_s=-1", "--price.gb_s"), ("cpu=1", "--price.cpu")])
def test_a_bad_price_flag_exits_2_naming_it(db, capsys, flag, field):
    assert main(["results", "--db", db, "runs", "--price", flag]) == 2
    assert capsys.readouterr().err.startswith(f"faasgd: error: {field}: ")
