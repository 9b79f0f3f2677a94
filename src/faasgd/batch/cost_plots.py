"""A batch's cost against time, as LambdaML draws it: one marker per configuration, mean run time on x, mean
cost per run on y, error bars the sample stdev over the rounds.

A run's time is its time to target when it reached the target, else its wall time (a stacking run's total
time); its cost is `cost_usd`, the run's total as its result records it. A configuration's point is
the mean over its finished rounds that have both; a hollow marker says some of them missed the target. Each
marker is numbered, and the legend below the axes maps the numbers to the configurations. A batch whose runs
carry no cost figures gets no plot (no file).
"""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import ScalarFormatter
from matplotlib.transforms import Bbox

from faasgd.batch.figure_style import LegendText, add_legend, add_title, look, new_panels, write
from faasgd.batch.report import by_configuration, label, mean, reached, stdev

# where a point's number may go, in points from the point, tried in order
PLACES = ((4, 4), (4, -4), (-4, 4), (-4, -4), (10, 10), (10, -10), (-10, 10), (-10, -10), (0, 14), (0, -14))
MARKER_PX = 5.0  # pixels from a marker's centre that a label must keep clear of
TIME_KEYS = ("wall_s", "total_s")  # a run's time when it did not reach the target: emnist's, then stacking's


def run_time(run: dict) -> float | None:
    """Seconds the run took: its time to target when reached, else its wall (or total) time; None if unknown."""
    if reached(run):
        return run["time_to_target_s"]
    return next((run[k] for k in TIME_KEYS if run.get(k) is not None), None)


def priced(group: list[dict]) -> list[tuple[float, float, bool]]:
    """(time, cost, reached the target) of the configuration's finished rounds that have both figures."""
    out = []
    for run in group:
        time, cost = run_time(run), run.get("cost_usd")
        if run.get("state") == "done" and time is not None and cost is not None:
            out.append((time, cost, reached(run)))
    return out


def draw_point(ax, points: list[tuple[float, float, bool]], style: dict) -> tuple[Line2D, tuple[float, float]]:
    """The configuration's mean point with error bars both ways, hollow when a round missed; its legend handle
    and the point."""
    times, costs = [p[0] for p in points], [p[1] for p in points]
    x, y = mean(times), mean(costs)
    face = style["color"] if all(p[2] for p in points) else "white"
    ax.errorbar([x], [y], xerr=[stdev(times) or 0.0], yerr=[stdev(costs) or 0.0], color=style["color"],
                marker=style["marker"], markersize=7, markerfacecolor=face, linestyle="none")
    handle = Line2D([], [], color=style["color"], marker=style["marker"], markerfacecolor=face, linestyle="none")
    return handle, (x, y)


def number_points(fig: Figure, ax, points: list[tuple[float, float]]) -> None:
    """Each point's number beside it, at the first of PLACES where it covers no other label, no other marker and
    stays inside the axes (the first place when none is free). Call once the figure is complete: it lays the
    figure out to measure the labels."""
    fig.draw_without_rendering()  # the constrained layout: the axes' final size
    renderer = FigureCanvasAgg(fig).get_renderer()
    to_display = ax.transData.transform
    markers = [Bbox.from_bounds(*(to_display((x, y)) - MARKER_PX), 2 * MARKER_PX, 2 * MARKER_PX) for x, y in points]
    taken: list[Bbox] = []
    for number, (x, y) in enumerate(points, start=1):
        others = taken + markers[:number - 1] + markers[number:]
        for place in PLACES:
            note = add_number(ax, number, (x, y), place)
            box = note.get_window_extent(renderer)
            if ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1) \
                    and not any(box.overlaps(other) for other in others):
                break
            note.remove()
        else:
            box = add_number(ax, number, (x, y), PLACES[0]).get_window_extent(renderer)
        taken.append(box)


def add_number(ax, number: int, point: tuple[float, float], place: tuple[int, int]):
    """The number as an annotation `place` points from `point`, on the side of the point that `place` says."""
    dx, dy = place
    return ax.annotate(str(number), point, xytext=place, textcoords="offset points", fontsize=7, color="0.2",
                       ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top")


def draw_cost_vs_time(runs: list[dict]) -> Figure | None:
    """Mean cost per run against mean run time, one marker per configuration; None without cost figures."""
    groups = [(g, priced(g)) for g in by_configuration(runs)]
    groups = [(g, points) for g, points in groups if points]
    if not groups:
        return None
    labels = tuple(f"{n}: {label(g[0])}" for n, (g, _) in enumerate(groups, start=1))
    legend = LegendText(labels, "configuration: mean ± stdev over the rounds; hollow: some rounds missed the target")
    fig, (sub,) = new_panels([legend])
    ax = sub.add_subplot()
    drawn = [draw_point(ax, points, look(i)) for i, (_, points) in enumerate(groups)]
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    formatter = ScalarFormatter(useMathText=True)
    formatter.set_powerlimits((-2, 4))
    ax.yaxis.set_major_formatter(formatter)
    ax.set_xlabel("run time (s): time to target, or wall time when the target was missed")
    ax.set_ylabel("cost per run (USD)")
    add_legend(sub, [handle for handle, _ in drawn], legend)
    add_title(fig, "Cost against time per configuration")
    number_points(fig, ax, [point for _, point in drawn])
    return fig


def plot_cost_vs_time(runs: list[dict], path) -> str | None:
    """cost_vs_time.png at `path`; its file name, or None (no file) when no run has a cost."""
    return write(draw_cost_vs_time, path, runs)
