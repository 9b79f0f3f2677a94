"""A stacking batch's plots: the time of each phase per configuration, as stacked horizontal bars, and
cost against time (cost_plots.py) when its runs carry cost figures.

One bar per configuration (its label), its segments the means over the finished rounds of upload_s,
train_s, reduce_s and meta_train_s, and the mean total_s as a black tick with the sample stdev over the
rounds as its error bar (the driver's own overhead is the gap between the bar's end and the tick). Drawn
in figure_style's look, the legend below the axes.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from faasgd.batch import cost_plots
from faasgd.batch.figure_style import LegendText, add_legend, add_title, colour, new_panels, wrap, write
from faasgd.batch.report import by_configuration, finished_values, label, mean, stdev
from faasgd.stacking.flow import PHASES

NAMES = {"upload_s": "upload", "train_s": "train", "reduce_s": "reduce", "meta_train_s": "meta-train"}
LINE_HEIGHT = 0.15  # inches per line of a configuration's label: a bar's row is as tall as its label
LABEL_CHARS = 40  # a configuration label longer than this is wrapped onto more lines


def draw_phases(runs: list[dict]) -> Figure | None:
    """The per-phase bars; None when no run finished."""
    groups = [g for g in by_configuration(runs) if finished_values(g, "total_s")]
    if not groups:
        return None
    legend = LegendText(tuple(NAMES[phase] for phase in PHASES) + ("total ± stdev",))
    names = [wrap(label(g[0]), LABEL_CHARS) for g in groups]
    row = LINE_HEIGHT * max(name.count("\n") + 1 for name in names) + 0.1
    fig, (sub,) = new_panels([legend], axes_height=1.3 + row * len(groups))
    ax = sub.add_subplot()
    rows = list(range(len(groups)))[::-1]  # the first configuration on top
    left = [0.0] * len(groups)
    handles = []
    for i, phase in enumerate(PHASES):
        widths = [mean(finished_values(g, phase)) or 0.0 for g in groups]
        handles.append(ax.barh(rows, widths, left=left, height=0.7, color=colour(i)))
        left = [a + b for a, b in zip(left, widths)]
    totals = [finished_values(g, "total_s") for g in groups]
    handles.append(ax.errorbar([mean(t) for t in totals], rows, xerr=[stdev(t) or 0.0 for t in totals],
                               marker="|", markersize=14, color="black", linestyle="none", zorder=3))
    ax.set_yticks(rows, names)
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_xlim(left=0)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("time (s), mean over the rounds that finished")
    add_legend(sub, handles, legend)
    add_title(fig, "Stacking: time of each phase per configuration")
    return fig


def plot_phases(runs: list[dict], path) -> str | None:
    return write(draw_phases, path, runs)


def write_plots(runs: list[dict], folder) -> dict[str, str]:
    """phases.png when any run finished, cost_vs_time.png when runs have cost; {plot name: file name} written."""
    plots = {"phases": plot_phases, "cost_vs_time": cost_plots.plot_cost_vs_time}
    written = {name: plot(runs, Path(folder) / f"{name}.png") for name, plot in plots.items()}
    return {name: file_name for name, file_name in written.items() if file_name}
