"""bench/stragglers.py: the settings its table covers (each slowed setting without and with its workload's
mitigations), the configs they give, and a row's medians."""

from __future__ import annotations

from faasgd.config import load_config
from support.bench_scripts import load_bench

bench = load_bench("stragglers")


def test_each_slowed_setting_runs_without_and_with_the_mitigation_and_every_config_is_valid():
    chosen = bench.settings(["downpour", "grad_avg"], [1, 4])
    assert [(s.workload, s.factor, s.mitigation) for s in chosen] == [
        ("downpour", 1, ""), ("downpour", 4, ""), ("downpour", 4, "max_staleness"), ("grad_avg", 1, ""),
        ("grad_avg", 4, ""), ("grad_avg", 4, "backup_workers")]
    configs = [load_config({}, s.overrides()) for s in chosen]
    assert [(c.slow_factor, c.slow_worker if c.slow_factor > 1 else None, c.max_staleness, c.backup_workers)
            for c in configs] == [(1.0, None, 0, 0), (4.0, 3, 0, 0), (4.0, 3, bench.BOUND, 0), (1.0, None, 0, 0),
                                  (4.0, 3, 0, 0), (4.0, 3, 0, 1)]
    assert all(c.number_of_workers == 4 and c.batch_size == 32 and c.target_accuracy == 0.85 for c in configs)


def test_a_row_shows_the_medians_of_its_rounds_and_how_many_reached_the_target():
    runs = [{"result": {"time_to_target_s": t, "samples_to_target": s, "reached_target": s is not None,
                        "slowed_s": 2.0, "bound_waits": w, "late_rounds": 0}} for t, s, w in ((10.0, 300, 4), (30.0, 500, 6),
                                                                            (None, None, 8))]
    row = bench.row(bench.Setting("downpour", 4, "max_staleness"), runs)
    assert row == "| downpour | 4x | max_staleness | 20.0 | 400 | 2/3 | 2.0 | 6 | 0 |"
