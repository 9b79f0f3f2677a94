"""The batch outputs (runs.csv, output.txt, summary.md, PNG plots) from synthetic run records."""

from __future__ import annotations

import csv
import re
import statistics

import matplotlib.image
import pytest

from faasgd.batch.plots import plot_time_vs_period, plot_time_vs_workers, write_plots
from faasgd.batch.report import (
    CONFIG_KEYS, CSV_COLUMNS, configuration_table, summarize, write_output_txt, write_runs_csv, write_summary_md,
)
from faasgd.config import TrainConfig

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


RESULTS = ("time_to_target_s", "reached_target", "epochs_to_target", "samples_to_target", "final_validation_accuracy",
           "final_test_accuracy", "epochs", "samples", "wall_s", "samples_per_s", "pushes", "fetches", "conflicts",
           "retries", "staleness_p50", "staleness_p99")


def make_run(config_id, workers, period, round_, state="done", reached=True):
    """One synthetic run record: time to target falls with workers and with a shorter period."""
    config = TrainConfig(number_of_workers=workers, n_fetch=period, n_push=period, seed=round_).to_dict()
    config["hidden_sizes"] = [256, 128]
    ttt = 12.0 / workers + period * 0.1 + round_ * 0.37
    final = 0.851 + 0.001 * round_ if reached else 0.84
    run = {
        "config_id": config_id,
        "configuration": f"number_of_workers={workers} n_fetch={period} n_push={period}",
        "varying": {"number_of_workers": workers, "n_fetch": period, "n_push": period},
        "round": round_, "config": config, "store": "redis", "job_id": f"j{config_id}-{round_}",
        "state": state, "error": None,
        "time_to_target_s": ttt if reached else None, "reached_target": reached,
        "epochs": 2.5 + workers * 0.25 + round_ if reached else 20.0, "final_test_accuracy": final,
        "final_validation_accuracy": 0.851 if reached else 0.84, "samples": 180000 * workers,
        "epochs_to_target": 2.0 + round_ if reached else None, "samples_to_target": 120000 if reached else None,
        "samples_per_s": 40000.0 * workers + round_, "pushes": 300, "fetches": 310, "conflicts": round_,
        "retries": 0, "staleness_p50": 1.0, "staleness_p99": 3.0, "wall_s": ttt + 1.0,
        "placement": [f"emnist-train-{w % 2 + 1}" for w in range(workers - 1)] + [None],
        "curve": [[ttt * f, 0.7 + (final - 0.7) * f] for f in (0.25, 0.5, 0.75, 1.0)],
    }
    if state == "failed":
        run.update(dict.fromkeys(RESULTS), error="store unavailable: redis://127.0.0.1:6379/0", curve=[])
    return run


@pytest.fixture
def runs():
    """3 worker counts × 2 periods × 2 rounds.

    (4 workers, period 1) round 2 failed; (1 worker, period 10) round 1 did not reach the target.
    """
    out = []
    for config_id, (workers, period) in enumerate((w, p) for w in (1, 2, 4) for p in (1, 10)):
        for round_ in (1, 2):
            failed = (workers, period, round_) == (4, 1, 2)
            missed = (workers, period, round_) == (1, 10, 1)
            out.append(make_run(config_id, workers, period, round_, "failed" if failed else "done", not missed))
    return out


@pytest.fixture
def meta():
    return {
        "name": "workers-period", "matrix_file": "bench/matrix/workers-period.yml",
        "matrix": {"name": "workers-period", "description": "Workers and period against time to 0.85."},
        "target": "local", "rounds": 2, "started_at": "2024-05-01T10:00:00Z", "finished_at": "2024-05-01T10:05:00Z",
        "versions": {"faasgd": "0.1.0", "python": "3.11.4", "numpy": "1.26.4", "redis-server": "7.2.4"},
        "seeds": [1, 2],
        "failures": [{"config_id": 4, "round": 2, "error": "store unavailable: redis://127.0.0.1:6379/0"}],
    }


def test_runs_csv_has_every_column_and_parses_back(runs, tmp_path):
    path = tmp_path / "runs.csv"
    write_runs_csv(runs, path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert set(CONFIG_KEYS) <= set(CSV_COLUMNS) and "placement" in CSV_COLUMNS
    assert len(rows) == 1 + len(runs) and all(len(row) == len(CSV_COLUMNS) for row in rows)
    for run, row in zip(runs, (dict(zip(rows[0], r)) for r in rows[1:])):
        assert row["hidden_sizes"] == "256,128"
        assert row["placement"] == ";".join(p or "" for p in run["placement"])
        for key in CONFIG_KEYS:
            value = run["config"][key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert type(value)(row[key]) == value
        for key in ("config_id", "round", "time_to_target_s", "epochs", "final_test_accuracy", "samples_per_s", "conflicts"):
            assert row[key] == ("" if run[key] is None else str(run[key]))
            if run[key] is not None:
                assert type(run[key])(row[key]) == run[key]
        assert row["error"] == (run["error"] or "") and row["state"] == run["state"]
        assert row["reached_target"] == ("" if run["reached_target"] is None else str(run["reached_target"]))


def test_configuration_table_rows_and_statistics(runs):
    group = [r for r in runs if r["config_id"] == 2]  # 2 workers, period 1: both rounds reached
    lines = configuration_table(group).splitlines()
    assert lines[0].split()[:5] == ["Round", "Time", "Iterations", "Accuracy", "Samples/s"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "Avg", "Stdev"]
    times = [r["time_to_target_s"] for r in group]
    epochs = [r["epochs"] for r in group]
    avg, sd = lines[3].split(), lines[4].split()
    assert float(avg[1]) == pytest.approx(statistics.mean(times), abs=0.005)
    assert float(sd[1]) == pytest.approx(statistics.stdev(times), abs=0.005)
    assert float(avg[2]) == pytest.approx(statistics.mean(epochs), abs=0.005)
    assert float(avg[4].replace(",", "")) == pytest.approx(statistics.mean(r["samples_per_s"] for r in group), abs=0.5)
    ends = [[m.end() for m in re.finditer(r"\S+", line)][:5] for line in lines]
    assert all(e == ends[0] for e in ends)  # fixed width, right-aligned up to Placement


def test_configuration_table_leaves_failed_and_missed_rounds_out_of_time_stats(runs):
    failed = configuration_table([r for r in runs if r["config_id"] == 4]).splitlines()
    assert failed[2].split()[:2] == ["2", "failed"]
    assert failed[3].split()[1] == f"{runs[8]['time_to_target_s']:.2f}"  # Avg of the one round that reached
    assert failed[4].split()[1] == "-"  # Stdev needs 2 values
    missed = configuration_table([r for r in runs if r["config_id"] == 1]).splitlines()
    assert missed[1].split()[:2] == ["1", "-"]
    assert missed[3].split()[1] == f"{runs[3]['time_to_target_s']:.2f}"
    assert missed[3].split()[2] == f"{statistics.mean([20.0, runs[3]['epochs']]):.2f}"  # finished rounds count


def test_output_txt_has_header_and_every_configuration(runs, meta, tmp_path):
    write_output_txt(runs, meta, tmp_path / "output.txt")
    text = (tmp_path / "output.txt").read_text()
    assert "workers-period" in text and "redis-server 7.2.4" in text
    headers = [line for line in text.splitlines() if line.startswith("== ")]
    assert headers == [f"== {r['configuration']} ==" for r in runs if r["round"] == 1]
    assert "round 2: failed: store unavailable" in text and "round 1: did not reach 0.85" in text


def test_summarize_counts_and_means(runs):
    summary = summarize(runs)
    assert [s["config_id"] for s in summary] == list(range(6))
    s4 = summary[4]
    assert (s4["runs"], s4["reached"], s4["failed"], s4["time_to_target_stdev"]) == (2, 1, 1, None)
    s0 = summary[0]
    times = [r["time_to_target_s"] for r in runs[:2]]
    assert s0["time_to_target_mean"] == pytest.approx(statistics.mean(times))
    assert s0["time_to_target_stdev"] == pytest.approx(statistics.stdev(times))
    assert s0["time_to_target_min"] == min(times) and s0["conflicts_mean"] == 1.5


def test_summary_md_has_table_failures_plots_and_repeat_command(runs, meta, tmp_path):
    plots = {"accuracy_vs_time": "accuracy_vs_time.png", "time_vs_workers": "time_vs_workers.png"}
    write_summary_md(runs, meta, tmp_path / "summary.md", plots)
    text = (tmp_path / "summary.md").read_text()
    assert text.startswith("# workers-period")
    table = [line for line in text.splitlines() if line.startswith("| number_of_workers=")]
    assert len(table) == 6 and "| 1 / 2 |" in table[4]
    assert "number_of_workers=4 n_fetch=1 n_push=1, round 2: store unavailable" in text
    assert "number_of_workers=1 n_fetch=10 n_push=10, round 1" in text  # missed the target
    assert "](accuracy_vs_time.png)" in text and "](time_vs_workers.png)" in text and "time_vs_period" not in text
    assert "./test.sh bench/matrix/workers-period.yml --rounds 2 --target local" in text
    assert "fashion-mnist" in text and "seeds: 1, 2" in text


def test_summary_md_says_none_without_failures(runs, meta, tmp_path):
    ok = [r for r in runs if r["state"] == "done"]
    write_summary_md(ok, {**meta, "failures": []}, tmp_path / "summary.md", {})
    assert "## Failures\n\nnone\n" in (tmp_path / "summary.md").read_text()


def test_write_plots_writes_readable_pngs(runs, tmp_path):
    written = write_plots(runs, tmp_path)
    assert written == {name: f"{name}.png" for name in ("accuracy_vs_time", "time_vs_workers", "time_vs_period")}
    for file_name in written.values():
        data = (tmp_path / file_name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
        image = matplotlib.image.imread(tmp_path / file_name)
        assert image.shape[0] > 400 and image.shape[1] > 700 and image.var() > 0


def test_plots_that_do_not_vary_are_skipped(runs, tmp_path):
    two_workers = [r for r in runs if r["config"]["number_of_workers"] == 2]
    assert plot_time_vs_workers(two_workers, tmp_path / "w.png") is None
    assert plot_time_vs_period(two_workers, tmp_path / "p.png") == "p.png"
    period_one = [r for r in runs if r["config"]["n_fetch"] == 1]
    assert plot_time_vs_period(period_one, tmp_path / "p1.png") is None
    assert set(write_plots(period_one, tmp_path)) == {"accuracy_vs_time", "time_vs_workers"}
    no_curves = [{**r, "curve": []} for r in period_one]
    assert "accuracy_vs_time" not in write_plots(no_curves, tmp_path)
    assert not (tmp_path / "w.png").exists() and not (tmp_path / "p1.png").exists()


def test_the_tables_show_the_cpu_per_sample_and_the_stores_share(runs, meta, tmp_path):
    group = [r for r in runs if r["config_id"] == 2]  # both rounds finished
    group[0].update(cpu_s_per_sample=8.5e-6, store_cpu_s=0.25, cpu_clock="process")
    group[1].update(cpu_s_per_sample=9.5e-6, store_cpu_s=None, cpu_clock="process")  # its store did not say
    lines = configuration_table(group).splitlines()
    assert lines[0].split()[5:9] == ["CPU", "µs/sample", "Store", "CPU"]
    assert lines[1].split()[5:7] == ["8.50", "0.25"] and lines[2].split()[5:7] == ["9.50", "-"]
    assert lines[3].split()[5:7] == ["9.00", "0.25"]  # Avg: over the rounds that have it
    write_summary_md(group, {**meta, "failures": []}, tmp_path / "summary.md", {})
    text = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "| Conflicts | CPU µs/sample | Store CPU s | GB-s |" in text and "| 9.00 | 0.25 |" in text
    write_runs_csv(group, tmp_path / "runs.csv")
    rows = list(csv.DictReader(open(tmp_path / "runs.csv", newline="")))
    assert [(r["cpu_s_per_sample"], r["store_cpu_s"], r["cpu_clock"]) for r in rows] == \
        [("8.5e-06", "0.25", "process"), ("9.5e-06", "", "process")]
