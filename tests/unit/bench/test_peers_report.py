"""bench/peers_report.py: the rows alternate round by round, and a role's rounds summarise as medians and a spread."""

from __future__ import annotations

from support.bench_scripts import load_bench


report = load_bench("peers_report")


def row(time_to_target_s, ready_s=1.0, samples_per_s=100.0, final_accuracy=0.86, rss=(200.0,), digests=None):
    made = {"time_to_target_s": time_to_target_s, "ready_s": ready_s, "samples_per_s": samples_per_s,
            "final_accuracy": final_accuracy, "peak_rss_mb": list(rss)}
    return made if digests is None else {**made, "param_digests": digests}


def test_every_round_runs_every_role_once_starting_one_further():
    calls = []
    runs = report.alternate(("a", "b", "c"), 4, lambda role: calls.append(role) or len(calls))
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert runs == {"a": [1, 6, 8, 10], "b": [2, 4, 9, 11], "c": [3, 5, 7, 12]}


def test_summary_takes_medians_over_the_rounds_that_reached_the_target():
    summary = report.summarise([row(4.0, ready_s=1.0, samples_per_s=300.0), row(None, ready_s=3.0, samples_per_s=100.0),
                                row(2.0, ready_s=2.0, samples_per_s=200.0, rss=(250.0,))])
    assert summary["time_to_target_s"] == 3.0 and summary["spread"] == [2.0, 4.0] and summary["reached"] == "2/3"
    # the time's factors over the same two rounds (ready 1.0 and 2.0); rates over all three
    assert summary["ready_s"] == 1.5 and summary["samples_per_s"] == 200.0 and summary["peak_rss_mb"] == [250.0]


def test_a_role_that_never_reached_the_target_has_no_time_and_an_empty_spread():
    summary = report.summarise([row(None, ready_s=1.0), row(None, ready_s=3.0)])
    assert summary["time_to_target_s"] is None and summary["spread"] == [] and summary["reached"] == "0/2"
    assert summary["ready_s"] == 2.0  # over every round run, when none reached


def test_one_round_has_a_spread_of_one_time():
    assert report.summarise([row(5.0)])["spread"] == [5.0]


def test_a_failed_round_is_left_out_and_a_role_failing_every_round_reports_its_error():
    assert report.summarise([{"error": "boom"}, row(3.0)])["reached"] == "1/2"
    assert report.summarise([{"error": "first"}, {"error": "last"}]) == {"error": "last"}


def test_ranks_that_disagree_in_any_round_are_reported():
    assert report.summarise([row(1.0, digests=["x", "x"]), row(1.0, digests=["y", "y"])])["same_params"] is True
    assert report.summarise([row(1.0, digests=["x", "x"]), row(1.0, digests=["x", "z"])])["same_params"] is False


def test_the_ratio_of_times_needs_both_times():
    rows = {"torch": {"time_to_target_s": 6.0}, "faasgd": {"time_to_target_s": 2.0}, "never": {"time_to_target_s": None},
            "failed": {"error": "boom"}}
    assert report.ratio(rows, "torch", "faasgd") == "3.00"
    assert report.ratio(rows, "never", "faasgd") == "-" and report.ratio(rows, "failed", "faasgd") == "-"


def test_faasgd_workers_time_is_split_by_medians_and_the_rest_is_what_no_part_holds(capsys):
    split = lambda worker_s, compute_s: {"worker_s": worker_s, "compute_s": compute_s, "batches_s": 0.1,  # noqa: E731
                                         "eval_s": 0.2, "load_s": 0.3, "comm_wait_s": 0.4}
    summary = report.summarise([{**row(2.0), "split": split(4.0, 1.0)}, {**row(3.0), "split": split(6.0, 3.0)},
                                {**row(4.0), "split": split(5.0, 2.0)}])
    assert summary["split"]["worker_s"] == 5.0 and summary["split"]["compute_s"] == 2.0
    report.print_split(summary["split"])
    out = capsys.readouterr().out
    assert "gradient steps 2.00 s (40%)" in out and "data loading 0.30 s (6%)" in out
    assert "the rest (records, submitting operations, the loop) 2.00 s (40%)" in out
    assert report.summarise([row(2.0)])["split"] is None


def test_the_64_row_rows_get_their_ratios_and_only_direct_64_its_goal(capsys, monkeypatch):
    monkeypatch.setattr(report, "replica_imports_mb", lambda: 70.0)  # a fresh interpreter's imports, not measured here
    times = {"numpy": 2.0, "torch": 6.0, "keras": 10.0, "torch-ddp": 12.0, "faasgd": 5.0, "faasgd-64": 4.0,
             "direct-64": 3.0}
    rows = {role: {**report.summarise([row(t)]), "same_params": True} for role, t in times.items()}
    report.print_mlp(rows, 0.85)
    lines = capsys.readouterr().out.splitlines()
    faasgd_64 = next(line for line in lines if line.startswith("faasgd-64 (64 rows"))
    direct_64 = next(line for line in lines if line.startswith("direct-64 (64 rows"))
    assert "faasgd-64 / numpy = 2.00;" in faasgd_64 and "goal" not in faasgd_64
    assert "direct-64 / numpy = 1.50 (goal <= 0.8);" in direct_64 and "torch / direct-64 = 2.00" in direct_64


def test_passes_to_target_are_summarised_by_their_median_and_split_a_row_s_time_from_numpy_s(capsys, monkeypatch):
    monkeypatch.setattr(report, "replica_imports_mb", lambda: 70.0)
    numpy = report.summarise([{**row(2.0, ready_s=0.5), "passes_to_target": 3},
                              {**row(2.6, ready_s=0.5), "passes_to_target": 4}, {**row(None), "passes_to_target": None}])
    assert numpy["passes_to_target"] == 3.5 and report.pass_seconds(numpy) == (2.3 - 0.5) / 3.5
    direct = report.summarise([{**row(3.5, ready_s=1.5), "passes_to_target": 4}])
    assert report.pass_seconds(direct) == 0.5
    assert report.pass_seconds(report.summarise([row(None)])) is None
    rows = {role: {**report.summarise([{**row(t), "passes_to_target": 2}]), "same_params": True}
            for role, t in {"torch": 6.0, "keras": 10.0, "torch-ddp": 12.0, "faasgd": 5.0, "faasgd-64": 4.0}.items()}
    report.print_mlp({"numpy": numpy, **rows, "direct-64": direct}, 0.85)
    out = capsys.readouterr().out
    assert "direct-64 against numpy: ready (s) 1.50 against 0.50 (3.00 x); passes 4 against 3.5 (1.14 x); " \
           "s a pass 0.50 against 0.51 (0.97 x)" in out
    numpy_line = next(line for line in out.splitlines() if line.startswith("numpy "))
    assert numpy_line.split()[7:9] == ["3.5", "0.51"]  # passes, s a pass: after the reached column


def test_a_torch_row_counts_its_passes_from_the_accuracy_after_each():
    torch_rows = load_bench("peers_torch")  # torch itself is imported inside its runners only
    assert torch_rows.passes_to_target([0.90, 0.70, 0.84, 0.86, 0.80], 0.85) == 3  # [0]: before any training
    assert torch_rows.passes_to_target([0.90, 0.70], 0.85) is None
