"""A batch's cost against time, as LambdaML draws it: one marker per configuration, mean run time on x, mean
cost per run on y, error bars the sample stdev over the rounds.

A run's time is its time to target when it reached the target, else its wall time (a stacking run's total
time); its cost is `cost_usd`, the run's total as its result records it. A configuration's point is
the mean over its finished rounds that have both; a hollow marker says some of them missed the target. Each
marker is numbered, and the legend below the axes maps the numbers to the configurations. A number goes beside its
marker where it covers no other number or marker; where cheap configurations cluster and no place beside is free,
further out on rings around it, with a thin line to its marker (`number_points`). A batch whose runs carry no cost
figures gets no plot (no file). An axis whose points span more than a factor LOG_SPAN is logarithmic (its label
says so): a linear one would crowd the cheap, quick configurations into its corner.
"""

from __future__ import annotations

import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogFormatterSciNotation, LogLocator, NullFormatter, ScalarFormatter
from matplotlib.transforms import Bbox

from faasgd.batch.figure_style import LegendText, add_legend, add_title, look, new_panels, write
from faasgd.batch.report import by_configuration, label, mean, reached, stdev

# where a point's number may go beside it, in points from the point, tried in order (the number's corner there)
PLACES = ((4, 4), (4, -4), (-4, 4), (-4, -4), (10, 10), (10, -10), (-10, 10), (-10, -10), (0, 14), (0, -14))
# then further out, the number centred on rings around the point (radius in points, 16 directions each), tried
# nearest first, with a line to the point
RINGS = (18, 28, 40, 54, 70, 88, 108, 130, 155, 185)
DIRECTIONS = 16
MARKER_SIZE = 7  # points: a configuration's marker
MARKER_CLEAR = MARKER_SIZE / 2 + 1.5  # points from a marker's centre that a number keeps clear of
GAP_PX = 1.0  # pixels kept between two numbers
LOG_SPAN = 10.0  # an axis is logarithmic when its largest point is more than this many times its smallest
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


def spans_decades(values: list[float]) -> bool:
    """True when the values are positive and the largest is more than LOG_SPAN times the smallest: a linear axis
    would crowd the small ones into a corner."""
    return bool(values) and min(values) > 0 and max(values) > LOG_SPAN * min(values)


def draw_point(ax, points: list[tuple[float, float, bool]], style: dict) -> tuple[Line2D, tuple[float, float]]:
    """The configuration's mean point with error bars both ways, hollow when a round missed; its legend handle
    and the point."""
    times, costs = [p[0] for p in points], [p[1] for p in points]
    x, y = mean(times), mean(costs)
    face = style["color"] if all(p[2] for p in points) else "white"
    ax.errorbar([x], [y], xerr=[stdev(times) or 0.0], yerr=[stdev(costs) or 0.0], color=style["color"],
                marker=style["marker"], markersize=MARKER_SIZE, markerfacecolor=face, linestyle="none")
    handle = Line2D([], [], color=style["color"], marker=style["marker"], markerfacecolor=face, linestyle="none")
    return handle, (x, y)


def number_points(fig: Figure, ax, points: list[tuple[float, float]]) -> None:
    """Each point's number at the first place that covers no other number and no marker and stays inside the axes:
    beside the point (PLACES), else centred on the nearest free spot of RINGS with a line to the point; the first
    place when none is free. Call once the figure is complete: it lays the figure out to measure the numbers."""
    fig.draw_without_rendering()  # the constrained layout: the axes' final size
    renderer = FigureCanvasAgg(fig).get_renderer()
    px_per_pt = fig.dpi / 72.0
    centres = [ax.transData.transform((x, y)) for x, y in points]
    clear = MARKER_CLEAR * px_per_pt
    markers = [Bbox.from_bounds(cx - clear, cy - clear, 2 * clear, 2 * clear) for cx, cy in centres]
    taken: list[Bbox] = []
    for number, centre in enumerate(centres, start=1):
        size = number_size(ax, number, renderer)
        others = taken + markers[:number - 1] + markers[number:]
        place, box = next(((place, box) for place, box in candidates(centre, size, px_per_pt)
                           if fits(box, ax.bbox, others)), (None, None))
        if place is None:
            place, box = PLACES[0], next(candidates(centre, size, px_per_pt))[1]
        add_number(ax, number, points[number - 1], place, leader=place not in PLACES)
        taken.append(box.expanded(1.0, 1.0).padded(GAP_PX))


def number_size(ax, number: int, renderer) -> tuple[float, float]:
    """The number's width and height in pixels, as add_number draws it."""
    probe = ax.text(0, 0, str(number), fontsize=7)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def candidates(centre, size: tuple[float, float], px_per_pt: float):
    """(place, the number's box in pixels there) for every place in the order tried: PLACES, then RINGS."""
    (cx, cy), (w, h) = centre, size
    for dx, dy in PLACES:
        x0 = cx + dx * px_per_pt - (w if dx < 0 else 0)
        y0 = cy + dy * px_per_pt - (h if dy < 0 else 0)
        yield (dx, dy), Bbox.from_bounds(x0, y0, w, h)
    for radius in RINGS:
        for step in range(DIRECTIONS):
            angle = math.pi / 4 + 2 * math.pi * step / DIRECTIONS  # up and right first, as beside
            dx, dy = round(radius * math.cos(angle), 1), round(radius * math.sin(angle), 1)
            yield (dx, dy), Bbox.from_bounds(cx + dx * px_per_pt - w / 2, cy + dy * px_per_pt - h / 2, w, h)


def fits(box: Bbox, axes: Bbox, others: list[Bbox]) -> bool:
    return axes.contains(box.x0, box.y0) and axes.contains(box.x1, box.y1) and not any(box.overlaps(o) for o in others)


def add_number(ax, number: int, point: tuple[float, float], place: tuple[float, float], leader: bool = False):
    """The number as an annotation `place` points from `point`: its corner there on the side `place` says, or
    centred there with a thin line to the point (`leader`)."""
    dx, dy = place
    if leader:
        return ax.annotate(str(number), point, xytext=place, textcoords="offset points", fontsize=7, color="0.2",
                           ha="center", va="center", zorder=4,
                           arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.5, "shrinkA": 2, "shrinkB": 4})
    return ax.annotate(str(number), point, xytext=place, textcoords="offset points", fontsize=7, color="0.2",
                       ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top", zorder=4)


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
    log_x, log_y = (spans_decades([point[k] for _, point in drawn]) for k in (0, 1))
    if log_x:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # seconds as plain numbers
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xlim(left=0)
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(bottom=0)
        formatter = ScalarFormatter(useMathText=True)
        formatter.set_powerlimits((-2, 4))
        ax.yaxis.set_major_formatter(formatter)
    ax.set_xlabel("run time (s): time to target, or wall time when the target was missed" + (", log" if log_x else ""))
    ax.set_ylabel("cost per run (USD)" + (", log" if log_y else ""))
    add_legend(sub, [handle for handle, _ in drawn], legend)
    add_title(fig, "Cost against time per configuration")
    number_points(fig, ax, [point for _, point in drawn])
    return fig


def plot_cost_vs_time(runs: list[dict], path) -> str | None:
    """cost_vs_time.png at `path`; its file name, or None (no file) when no run has a cost."""
    return write(draw_cost_vs_time, path, runs)
