"""A batch's plots as PNG files: accuracy against time, time to target against workers and period.

Each plot has a `draw_*` function that builds its `Figure` from the run records (None when the batch
has nothing to show on its axes) and a `plot_*` function that writes it through figure_style, which
gives every plot the same look, keeps every text inside the figure and puts legends below the axes.
Many configurations (or lines) are split over panels of at most figure_style.PANEL_MAX that share their
axes; a panel's title names the settings its series share, its legend the rest. Time means and error
bars (sample stdev over the rounds) leave out runs that failed or never reached the target. The cost
plot is cost_plots.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, ScalarFormatter

from faasgd.batch import cost_plots
from faasgd.batch.figure_style import (
    AXES_HEIGHT, LegendText, add_legend, add_title, fit, grid_columns, look, new_panels, panel_title, shared_settings,
    split, text_chars, write,
)
from faasgd.batch.report import by_configuration, cell, label, mean, stdev, times_to_target

STRIP_ROW = 0.13  # inches per configuration in the time-to-target strip above the accuracy axes
Points = dict[Any, tuple[list[float], int]]  # one line's {x: (times to target reached, rounds finished)}


def value(run: dict, key: str) -> Any:
    """A run's value for a matrix key: the varying dict, then its config, then the record itself."""
    if key in (run.get("varying") or {}):
        return run["varying"][key]
    config = run.get("config") or {}
    return config[key] if key in config else run.get(key)


def varies(runs: list[dict], key: str) -> bool:
    return len({cell(value(run, key)) for run in runs}) > 1


def settings(run: dict, exclude: frozenset[str] = frozenset()) -> dict[str, str]:
    """The run's varying keys other than `exclude`, with their values as table text."""
    return {k: cell(v) for k, v in (run.get("varying") or {}).items() if k not in exclude}


@dataclass(frozen=True)
class Series:
    """One configuration or line of a panel: its varying settings, its full label, a note after its label."""

    settings: dict[str, str]
    label: str
    note: str = ""


def panel_texts(panel: list[Series], extra: LegendText) -> tuple[str, LegendText]:
    """A panel's title (the settings its series share) and its legend: each series' other settings (its full
    label when it has none), then `extra`'s labels, with `extra`'s title and width."""
    shared, own = shared_settings([series.settings for series in panel])
    labels = [(text if series.settings else series.label) + series.note for text, series in zip(own, panel)]
    return shared, LegendText(tuple(labels) + extra.labels, extra.title, extra.chars)


def targets(runs: list[dict]) -> list[float]:
    """The distinct target accuracies below 1.0 (1.0 means "run every epoch", no target)."""
    found = {(run.get("config") or {}).get("target_accuracy") for run in runs}
    return sorted(t for t in found if t is not None and t < 1.0)


def target_text(runs: list[dict]) -> str:
    found = targets(runs)
    return "validation accuracy " + "/".join(f"{t:g}" for t in found) if found else "the target"


def reach_note(group: list[dict]) -> str:
    """" (2/3 reached)" when some finished rounds of the configuration missed the target; else empty."""
    finished = [run for run in group if run.get("state") == "done"]
    reached = times_to_target(group)
    return f" ({len(reached)}/{len(finished)} reached)" if len(reached) < len(finished) else ""


def until_crossing(run: dict) -> list[list[float]]:
    """The run's validation curve up to its crossing, which ends it (what came after trained on past the target
    until the workers stopped: not the job's model); the whole curve when it has none."""
    points, crossed = run.get("curve") or [], run.get("crossing")
    if not crossed:
        return points
    return [p for p in points if p[0] < crossed[0]] + [list(crossed)]


def draw_curves(ax, group: list[dict], style: dict) -> Line2D:
    """The configuration's rounds as thin lines of validation accuracy, each ending at its crossing, marked; its
    legend handle."""
    for run in group:
        points = until_crossing(run)
        if points:
            seconds, accuracy = zip(*points)
            ax.plot(seconds, accuracy, color=style["color"], linewidth=1.0, alpha=0.6)
        if run.get("crossing"):
            ax.plot(*run["crossing"], color=style["color"], marker=style["marker"], markersize=4, linestyle="none")
    return Line2D([], [], color=style["color"], marker=style["marker"], linewidth=1.5)


def draw_time_strip(strip, panel: list[list[dict]], target: float) -> None:
    """One row per configuration, first on top: its mean time to target ± stdev (no mark when none reached)."""
    for row, group in enumerate(panel):
        times = times_to_target(group)
        if times:
            style = look(row)
            strip.errorbar([mean(times)], [row], xerr=[stdev(times) or 0.0], color=style["color"],
                           marker=style["marker"], markersize=5, linewidth=1.2)
    strip.set_ylim(len(panel) - 0.5, -0.5)
    strip.set_yticks([])
    strip.grid(axis="y", visible=False)
    strip.tick_params(labelbottom=False)
    strip.set_ylabel(f"time to\n{target:g}", rotation=0, ha="right", va="center", fontsize="small")


def panel_axes(sub, first, strip_rows: int):
    """The panel's accuracy axes sharing both axes with `first`, and above it, when `strip_rows`, the
    time-to-target strip sharing its time axis (else None)."""
    if not strip_rows:
        return None, sub.add_subplot(sharex=first, sharey=first)
    grid = sub.add_gridspec(2, 1, height_ratios=[STRIP_ROW * strip_rows + 0.1, AXES_HEIGHT - 0.9])
    strip = sub.add_subplot(grid[0], sharex=first)
    return strip, sub.add_subplot(grid[1], sharex=strip, sharey=first)


def draw_accuracy_vs_time(runs: list[dict]) -> Figure | None:
    """Validation accuracy (what the target is checked on: epoch ends and Downpour's checks) against seconds since
    the job was created: one colour per configuration, a line per round ending at its crossing (marked), the target
    dashed, and above it (one target) each configuration's mean time to target ± stdev; None when no run has a
    curve."""
    groups = [g for g in by_configuration(runs) if any(run.get("curve") for run in g)]
    if not groups:
        return None
    found = targets(runs)
    target = found[0] if len(found) == 1 and times_to_target(runs) else None
    panels = split(groups)
    key = ("configuration: one line per round of validation accuracy (what the target is checked on), ending at its "
           "crossing (marked)" + ("; above: mean time to target ± stdev" if target else ""))
    extra = LegendText(tuple(f"target {t:g} (validation)" for t in found), key, text_chars(grid_columns(len(panels))))
    texts = [panel_texts([Series(settings(g[0]), label(g[0]), reach_note(g)) for g in panel], extra)
             for panel in panels]
    strip_rows = max(len(panel) for panel in panels) if target else 0
    fig, subfigures = new_panels([legend for _, legend in texts], AXES_HEIGHT + STRIP_ROW * strip_rows)
    first = None
    for index, (panel, sub, (shared, legend)) in enumerate(zip(panels, subfigures, texts)):
        strip, ax = panel_axes(sub, first, strip_rows)
        first = first or ax
        handles = [draw_curves(ax, group, look(i)) for i, group in enumerate(panel)]
        handles += [ax.axhline(t, color="0.3", linestyle="--", linewidth=1.0) for t in found]  # on validation
        if strip:
            draw_time_strip(strip, panel, target)
        ax.set_xlabel(fit("time since the job was created (s)", len(panels)))
        ax.set_ylabel("validation accuracy")
        (strip or ax).set_title(panel_title(index, panels, shared))
        add_legend(sub, handles, legend)
    first.set_xlim(left=0)  # after every panel's data, which the shared axes scale to
    datasets = sorted({str((run.get("config") or {}).get("dataset")) for run in runs})
    add_title(fig, f"Validation accuracy of the global model over time, {'/'.join(datasets)}")
    return fig


def time_points(runs: list[dict], x_key: str, exclude: frozenset[str]) -> dict[tuple, Points]:
    """{line (its settings as pairs): {x: (times to target of the rounds that reached it, rounds that finished)}}."""
    lines: dict[tuple, Points] = {}
    for run in sorted(runs, key=lambda r: r["config_id"]):
        points = lines.setdefault(tuple(settings(run, exclude).items()), {})
        times, finished = points.get(value(run, x_key), ([], 0))
        points[value(run, x_key)] = (times + times_to_target([run]), finished + (run.get("state") == "done"))
    return lines


def draw_time_line(ax, points: Points, style: dict) -> Line2D:
    """One line of mean time to target ± stdev; a hollow marker where some rounds missed the target."""
    xs = [x for x in sorted(points) if points[x][0]]
    ax.errorbar(xs, [mean(points[x][0]) for x in xs], yerr=[stdev(points[x][0]) or 0.0 for x in xs],
                color=style["color"], marker=style["marker"], linewidth=1.5)
    missed = [x for x in xs if len(points[x][0]) < points[x][1]]
    ax.plot(missed, [mean(points[x][0]) for x in missed], linestyle="none", marker=style["marker"],
            markerfacecolor="white", markeredgecolor=style["color"], zorder=3)
    return Line2D([], [], color=style["color"], marker=style["marker"], linewidth=1.5)


def draw_time_lines(runs: list[dict], x_key: str, exclude: frozenset[str], x_label: str, log_x: bool) -> Figure | None:
    """Mean time to target (error bars: sample stdev over the rounds that reached it) against `x_key`, one
    line per other varying combination; None when no run reached the target."""
    lines = time_points(runs, x_key, exclude)
    names = [name for name, points in lines.items() if any(times for times, _ in points.values())]
    if not names:
        return None
    xs_all = sorted({x for points in lines.values() for x in points})
    panels = split(names)
    key = LegendText((), "mean ± stdev over the rounds that reached the target; hollow: some rounds missed it",
                     text_chars(grid_columns(len(panels))))
    texts = [panel_texts([Series(dict(name), "all runs") for name in panel], key) for panel in panels]
    fig, subfigures = new_panels([legend for _, legend in texts])
    first = None
    for index, (panel, sub, (shared, legend)) in enumerate(zip(panels, subfigures, texts)):
        ax = sub.add_subplot(sharex=first, sharey=first)
        first = first or ax
        handles = [draw_time_line(ax, lines[name], look(i)) for i, name in enumerate(panel)]
        if log_x:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(xs_all)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlabel(fit(x_label, len(panels)))
        ax.set_ylabel("time to target (s)")
        ax.set_title(panel_title(index, panels, shared, "lines"))
        add_legend(sub, handles, legend)
    first.set_ylim(bottom=0)  # after every panel's data, which the shared axes scale to
    add_title(fig, f"Time to reach {target_text(runs)}")
    return fig


def draw_time_vs_workers(runs: list[dict]) -> Figure | None:
    """Mean time to target against number_of_workers, one line per other varying combination;
    None when number_of_workers does not vary or no run reached the target."""
    if not varies(runs, "number_of_workers"):
        return None
    workers = "number_of_workers"
    return draw_time_lines(runs, workers, frozenset({workers}), "number of workers", log_x=False)


def draw_time_vs_period(runs: list[dict]) -> Figure | None:
    """Mean time to target against n_fetch (n_push when only it varies), log x axis, one line per
    number_of_workers and other varying keys; None when neither n_fetch nor n_push varies."""
    if not (varies(runs, "n_fetch") or varies(runs, "n_push")):
        return None
    if all(value(run, "n_fetch") == value(run, "n_push") for run in runs):
        x_key, exclude = "n_fetch", frozenset({"n_fetch", "n_push"})
        x_label = "n_fetch = n_push (minibatches between fetches and pushes)"
    elif varies(runs, "n_fetch"):
        x_key, exclude, x_label = "n_fetch", frozenset({"n_fetch"}), "n_fetch (minibatches between fetches)"
    else:
        x_key, exclude, x_label = "n_push", frozenset({"n_push"}), "n_push (minibatches between pushes)"
    return draw_time_lines(runs, x_key, exclude, x_label, log_x=True)


def plot_accuracy_vs_time(runs: list[dict], path) -> str | None:
    return write(draw_accuracy_vs_time, path, runs)


def plot_time_vs_workers(runs: list[dict], path) -> str | None:
    return write(draw_time_vs_workers, path, runs)


def plot_time_vs_period(runs: list[dict], path) -> str | None:
    return write(draw_time_vs_period, path, runs)


def write_plots(runs: list[dict], folder) -> dict[str, str]:
    """Writes the plots that apply into `folder`; returns {plot name: file name} for those written."""
    plots = {
        "accuracy_vs_time": plot_accuracy_vs_time,
        "time_vs_workers": plot_time_vs_workers,
        "time_vs_period": plot_time_vs_period,
        "cost_vs_time": cost_plots.plot_cost_vs_time,
    }
    written = {}
    for name, plot in plots.items():
        file_name = plot(runs, Path(folder) / f"{name}.png")
        if file_name:
            written[name] = file_name
    return written
