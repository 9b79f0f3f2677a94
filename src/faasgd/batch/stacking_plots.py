"""A stacking batch's plot: the time of each phase per configuration, as stacked horizontal bars.

One bar per configuration (its label), its segments the means over the finished rounds of upload_s,
train_s, reduce_s and meta_train_s, and the mean total_s as a black tick (the driver's own overhead is
the gap between the bar's end and the tick). Built like plots.py: a Figure and the Agg canvas, no pyplot.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from faasgd.batch.plots import colour, save
from faasgd.batch.report import by_configuration, finished_values, label, mean
from faasgd.stacking.flow import PHASES

NAMES = {"upload_s": "upload", "train_s": "train", "reduce_s": "reduce", "meta_train_s": "meta-train"}


def plot_phases(runs: list[dict], path) -> str | None:
    """The per-phase bars; None when no run finished."""
    groups = [g for g in by_configuration(runs) if finished_values(g, "total_s")]
    if not groups:
        return None
    fig = Figure(figsize=(7.0, 1.6 + 0.45 * len(groups)), layout="constrained")
    ax = fig.subplots()
    rows = list(range(len(groups)))[::-1]  # the first configuration on top
    left = [0.0] * len(groups)
    for i, phase in enumerate(PHASES):
        widths = [mean(finished_values(g, phase)) or 0.0 for g in groups]
        ax.barh(rows, widths, left=left, color=colour(i, len(PHASES)), label=NAMES[phase])
        left = [a + b for a, b in zip(left, widths)]
    ax.scatter([mean(finished_values(g, "total_s")) for g in groups], rows, marker="|", s=300, color="black",
               label="total", zorder=3)
    ax.set_yticks(rows, [label(g[0]) for g in groups], fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds (mean over the rounds that finished)")
    ax.set_title("Stacking: time of each phase per configuration", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, path)


def write_plots(runs: list[dict], folder) -> dict[str, str]:
    """phases.png when any run finished; {plot name: file name} of those written."""
    written = plot_phases(runs, Path(folder) / "phases.png")
    return {"phases": written} if written else {}
