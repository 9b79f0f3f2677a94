"""The error bars of the accuracy and time-to-target plots: the mean and sample stdev of the rounds that reached
the target, hand-computed, and a hollow marker where some rounds missed it."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.legend import Legend

from faasgd.batch import figure_style, plots


def run(config_id, workers, round_, ttt):
    reached = ttt is not None
    return {"config_id": config_id, "configuration": f"number_of_workers={workers}", "round": round_,
            "varying": {"number_of_workers": workers}, "state": "done", "reached_target": reached,
            "time_to_target_s": ttt, "wall_s": (ttt or 40.0) + 1.0,
            "config": {"number_of_workers": workers, "n_fetch": 1, "n_push": 1, "target_accuracy": 0.85,
                       "dataset": "fashion-mnist"},
            "curve": [[1.0, 0.6], [ttt or 40.0, 0.86 if reached else 0.8]]}


TIMES = {1: [10.0, 12.0, 14.0], 2: [6.0, None, 7.0], 4: [None, None, None]}


@pytest.fixture
def runs():
    return [run(i, workers, r + 1, ttt) for i, (workers, times) in enumerate(TIMES.items())
            for r, ttt in enumerate(times)]


def bars(ax, along: str) -> list[tuple[float, float, float]]:
    """(x, y, half-width of the error bar along `along`) of each error bar of the axes, in drawing order."""
    out = []
    for container in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
        line, _, (errors,) = container.lines
        (x, y), = line.get_xydata()[:1]
        a, b = errors.get_segments()[0]
        out.append((x, y, abs(b[0] - a[0]) / 2 if along == "x" else abs(b[1] - a[1]) / 2))
    return out


def test_accuracy_plot_strip_has_each_configurations_mean_time_to_target_and_stdev(runs):
    fig = figure_style.render(plots.draw_accuracy_vs_time, runs)
    strip = next(ax for ax in fig.axes if ax.containers)
    reached = {w: [t for t in times if t is not None] for w, times in TIMES.items()}
    expected = [(12.0, 0, statistics.stdev(reached[1])), (6.5, 1, statistics.stdev(reached[2]))]  # 4: no mark
    assert np.array(bars(strip, "x")) == pytest.approx(np.array(expected))
    legend = [t.get_text() for t in fig.findobj(Legend)[0].get_texts()]
    assert legend == ["number_of_workers=1", "number_of_workers=2 (2/3 reached)", "number_of_workers=4 (0/3 reached)",
                      "target 0.85 (validation)"]


def test_time_vs_workers_points_are_means_with_stdev_and_hollow_where_rounds_missed(runs):
    fig = figure_style.render(plots.draw_time_vs_workers, runs)
    ax = fig.axes[0]
    container = next(c for c in ax.containers if isinstance(c, ErrorbarContainer))
    line, _, (errors,) = container.lines
    assert line.get_xydata() == pytest.approx(np.array([[1, 12.0], [2, 6.5]]))  # 4 workers: none reached, no point
    halves = [abs(b[1] - a[1]) / 2 for a, b in errors.get_segments()]
    assert halves == pytest.approx([2.0, statistics.stdev([6.0, 7.0])])
    hollow = [other for other in ax.lines if other is not line and other.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and hollow[0].get_xydata() == pytest.approx(np.array([[2, 6.5]]))
