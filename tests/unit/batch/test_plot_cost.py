"""The cost-against-time plot: each configuration's point at the mean of its rounds' run time and cost, error bars
their sample stdev, a hollow marker where a round missed the target, and no file when the runs carry no cost."""

from __future__ import annotations

import statistics

import matplotlib.image
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.legend import Legend

from faasgd.batch import cost_plots, figure_style, plots, stacking_plots
from faasgd.batch.report import write_summary_md


def run(config_id, round_, ttt, wall, cost, reached=True, state="done"):
    return {"config_id": config_id, "configuration": f"number_of_workers={config_id + 1}", "round": round_,
            "varying": {"number_of_workers": config_id + 1}, "config": {"target_accuracy": 0.85}, "state": state,
            "reached_target": reached, "time_to_target_s": ttt if reached else None, "wall_s": wall,
            "cost_usd": cost, "cost_faas_usd": cost, "cost_store_usd": 0.0, "billed_gb_s": 1.0, "requests": 2,
            "curve": [[0.5, 0.6], [ttt or wall, 0.86 if reached else 0.8]]}


@pytest.fixture
def runs():
    """Configuration 0: three rounds that reached the target; configuration 1: round 2 missed it, round 3 failed."""
    return [run(0, 1, 10.0, 11.0, 4e-5), run(0, 2, 12.0, 13.5, 5e-5), run(0, 3, 11.0, 12.0, 6e-5),
            run(1, 1, 6.0, 7.0, 8e-5), run(1, 2, None, 30.0, 2e-4, reached=False),
            run(1, 3, None, None, None, reached=False, state="failed")]


def points(fig):
    """(x, y, xerr, yerr, marker face colour) of each configuration's error bar, in order."""
    ax = next(ax for ax in fig.axes if ax.containers)
    out = []
    for container in ax.containers:
        assert isinstance(container, ErrorbarContainer)
        line, _, (xbars, ybars) = container.lines
        (x, y), = line.get_xydata()
        (x0, _), (x1, _) = xbars.get_segments()[0]
        (_, y0), (_, y1) = ybars.get_segments()[0]
        out.append((x, y, (x1 - x0) / 2, (y1 - y0) / 2, line.get_markerfacecolor()))
    return out


def test_run_time_is_time_to_target_when_reached_else_wall_or_total_time(runs):
    assert cost_plots.run_time(runs[0]) == 10.0
    assert cost_plots.run_time(runs[4]) == 30.0  # missed: its wall time
    assert cost_plots.run_time({"state": "done", "total_s": 2.5}) == 2.5  # a stacking run
    assert cost_plots.run_time({"state": "failed"}) is None


def test_each_point_is_the_mean_of_its_rounds_with_stdev_error_bars(runs):
    fig = figure_style.render(cost_plots.draw_cost_vs_time, runs)
    (x0, y0, xerr0, yerr0, face0), (x1, y1, xerr1, yerr1, face1) = points(fig)
    assert (x0, y0) == pytest.approx((11.0, 5e-5)) and (xerr0, yerr0) == pytest.approx((1.0, 1e-5))
    assert (x1, y1) == pytest.approx((18.0, 1.4e-4))  # 6 s reached, 30 s wall time; the failed round left out
    assert (xerr1, yerr1) == pytest.approx((statistics.stdev([6.0, 30.0]), statistics.stdev([8e-5, 2e-4])))
    assert face0 != "white" and face1 == "white"  # hollow: a round missed the target
    ax = fig.axes[0]
    assert ax.get_xlabel().endswith("was missed") and "(s)" in ax.get_xlabel() and "(USD)" in ax.get_ylabel()
    numbers = sorted(text.get_text() for text in ax.texts)
    assert numbers == ["1", "2"]
    legend = [text.get_text() for text in fig.findobj(Legend)[0].get_texts()]
    assert legend == ["1: number_of_workers=1", "2: number_of_workers=2"]


def test_one_round_has_no_error_bar(runs):
    fig = figure_style.render(cost_plots.draw_cost_vs_time, runs[:1])
    (x, y, xerr, yerr, _), = points(fig)
    assert (x, y, xerr, yerr) == (10.0, 4e-5, 0.0, 0.0)


def test_no_cost_figures_no_plot_and_no_file(runs, tmp_path):
    no_cost = [{k: v for k, v in r.items() if not k.startswith("cost_")} for r in runs]
    assert cost_plots.plot_cost_vs_time(no_cost, tmp_path / "cost_vs_time.png") is None
    assert not (tmp_path / "cost_vs_time.png").exists()
    assert "cost_vs_time" not in plots.write_plots(no_cost, tmp_path)
    assert "cost_vs_time" not in stacking_plots.write_plots(no_cost, tmp_path)
    assert cost_plots.draw_cost_vs_time([{**r, "cost_usd": None} for r in runs]) is None


def test_write_plots_writes_the_cost_plot_when_runs_have_cost(runs, tmp_path):
    written = plots.write_plots(runs, tmp_path)
    assert written["cost_vs_time"] == "cost_vs_time.png"
    image = matplotlib.image.imread(tmp_path / "cost_vs_time.png")
    assert image.shape[1] == round(figure_style.WIDTH * figure_style.DPI) and image.std() > 0.01
    stacking = [{**r, "workload": "stacking", "total_s": r["wall_s"], **dict.fromkeys(
        ("upload_s", "train_s", "reduce_s", "meta_train_s"), 1.0)} for r in runs]
    write_summary_md(runs, {"name": "cost", "failures": []}, tmp_path / "summary.md", written)
    assert "![Cost against time per configuration](cost_vs_time.png)" in (tmp_path / "summary.md").read_text()
    (tmp_path / "stacking").mkdir()
    assert set(stacking_plots.write_plots(stacking, tmp_path / "stacking")) == {"phases", "cost_vs_time"}
