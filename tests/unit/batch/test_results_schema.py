"""runs.csv against its schema (faasgd.batch.schema): one column per name, every column documented, in the docs."""

from __future__ import annotations

import csv
import pathlib

import pytest

from faasgd import cost
from faasgd.batch import schema
from faasgd.batch.report import CSV_COLUMNS, write_runs_csv
from faasgd.config import TrainConfig
from support.docs import load_hook
from support.paths import ROOT


def fake_run(config_id: int, round_: int) -> dict:
    """A run record as batch/runs.py makes one: identity, the job's config, the result's measures."""
    figures = cost.job_figures([{"invocations": 2, "billed_s": 1.5, "billed_gb_s": 1.5, "memory_mb": 1024.0,
                                 "cold_starts": 1}], [{"billed_s": 0.1, "memory_mb": 1024.0, "cold": True}], 4.0)
    return {"config_id": config_id, "configuration": f"number_of_workers={config_id + 1}", "round": round_,
            "varying": {"number_of_workers": config_id + 1}, "store": "redis", "job_id": f"j{config_id}-{round_}",
            "config": TrainConfig(number_of_workers=config_id + 1, store="redis").to_dict(), "state": "done",
            "error": None, "time_to_target_s": 3.25, "reached_target": True, "wall_s": 4.0, "samples": 24000,
            "samples_per_s": 6400.0, **figures, "placement": ["emnist-train-1", None]}


def read_header(path: pathlib.Path) -> list[str]:
    """The header as pandas reads it when installed (it renames a repeated name), else as csv does."""
    try:
        import pandas
    except ImportError:
        with open(path, newline="", encoding="utf-8") as f:
            return next(csv.reader(f))
    frame = pandas.read_csv(path)
    assert frame.columns.is_unique
    return list(frame.columns)


def test_runs_csv_has_one_column_per_name_and_every_column_documented(tmp_path):
    path = tmp_path / "runs.csv"
    write_runs_csv([fake_run(c, r) for c in (0, 1) for r in (1, 2)], path)
    header = read_header(path)
    assert len(header) == len(set(header)) == len(CSV_COLUMNS)
    assert schema.problems(header) == []
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [row["store"] for row in rows] == ["redis"] * 4  # the one `store`: the job's config key
    assert {row["requests"] for row in rows} == {"3"} and float(rows[0]["cost_usd"]) > 0


def test_problems_names_a_duplicated_an_undocumented_and_a_missing_column():
    header = list(CSV_COLUMNS)
    assert schema.problems(header + ["store"]) == ["column 'store' appears 2 times"]
    assert schema.problems(header + ["latency_ms"]) == \
        ["column 'latency_ms' is not in the schema (faasgd.batch.schema)"]
    assert schema.problems([c for c in header if c != "billed_gb_s"]) == \
        ["column 'billed_gb_s' is in the schema but not in the header"]


def test_every_column_has_a_known_clock_and_every_duration_a_clock():
    for column in schema.COLUMNS:
        assert column.clock in ("", *schema.CLOCKS), column
        if column.unit == "s":
            assert column.clock, f"{column.name} is a duration without a clock"


def test_the_docs_show_the_schema_as_rendered():
    page = (ROOT / "docs" / "reference" / "runs-csv.md").read_text(encoding="utf-8")
    assert schema.render_markdown() in load_hook().fill(page), "the runs.csv page lost its placeholder"


@pytest.mark.parametrize("name", ["store", "cost_usd", "billed_gb_s", "time_to_target_s", "cpu_s"])
def test_a_column_appears_once_in_the_schema(name):
    assert [c.name for c in schema.COLUMNS].count(name) == 1
