"""Two plots where a batch's figures crowd or mislead.

cost_vs_time.png: where cheap configurations cluster, every configuration's number stays readable (no two number
boxes overlap, none covers a marker, all inside the axes), and an axis spanning decades is logarithmic.
accuracy_vs_time.png: a round that reached its target (checked on validation accuracy, between epoch ends for
Downpour) is drawn on the curve the target is checked on and ends at its crossing, on or above the target line.
"""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from matplotlib.text import Text

from faasgd.batch import cost_plots, figure_style, plots
from faasgd.batch import runs as batch_runs

TARGET = 0.85


def priced_run(config_id, round_, seconds, cost):
    return {"config_id": config_id, "configuration": f"number_of_workers={config_id + 1} n_fetch=10",
            "round": round_, "varying": {"number_of_workers": config_id + 1}, "config": {"target_accuracy": TARGET},
            "state": "done", "reached_target": True, "time_to_target_s": seconds, "wall_s": seconds + 1.0,
            "cost_usd": cost, "curve": []}


def clustered(cheap=10):
    """`cheap` configurations within a second and a few percent of cost of each other, three far dearer."""
    runs = []
    for c in range(cheap):
        runs += [priced_run(c, r, 5.0 + 0.05 * c + 0.02 * r, 1.0e-5 + 2e-8 * c + 1e-8 * r) for r in (1, 2)]
    for c, (seconds, cost) in enumerate([(90.0, 8e-4), (120.0, 1.2e-3), (60.0, 5e-4)], start=cheap):
        runs += [priced_run(c, r, seconds + r, cost * (1 + 0.05 * r)) for r in (1, 2)]
    return runs


def spread(cheap=14):
    """Cheap configurations a few seconds and tens of µUSD apart: crowded on a linear scale."""
    runs = []
    for c in range(cheap):
        seconds, cost = 4.0 + (c * 7 % 13) * 0.45, 1e-5 + (c * 5 % 11) * 1.8e-6
        runs += [priced_run(c, r, seconds + 0.1 * r, cost * (1 + 0.02 * r)) for r in (1, 2)]
    runs += [priced_run(cheap, r, 90.0 + r, 4e-4) for r in (1, 2)]
    return runs


def number_boxes(fig):
    """{number: its box in pixels} and every marker's centre in pixels, as drawn."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    boxes = {int(t.get_text()): Text.get_window_extent(t, renderer) for t in ax.texts}  # the number, not its line
    centres = [ax.transData.transform(c.lines[0].get_xydata()[0]) for c in ax.containers]
    return ax, boxes, centres


@pytest.mark.parametrize("runs", [clustered(), clustered(16), spread()], ids=["10 in a clump", "16 in a clump", "spread"])
def test_no_two_configuration_numbers_overlap_and_none_covers_a_marker(runs):
    fig = figure_style.render(cost_plots.draw_cost_vs_time, runs)
    ax, boxes, centres = number_boxes(fig)
    assert sorted(boxes) == list(range(1, len(centres) + 1))
    for (a, box_a), (b, box_b) in itertools.combinations(boxes.items(), 2):
        assert not box_a.overlaps(box_b), f"numbers {a} and {b} overlap"
    radius = cost_plots.MARKER_SIZE / 2 * fig.dpi / 72
    for number, box in boxes.items():
        assert ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1), f"number {number} outside"
        for other, (cx, cy) in enumerate(centres, start=1):
            if other != number:
                assert not box.overlaps(box.from_bounds(cx - radius, cy - radius, 2 * radius, 2 * radius)), \
                    f"number {number} covers marker {other}"


def test_a_number_moved_away_from_its_crowd_has_a_line_to_its_marker():
    fig = figure_style.render(cost_plots.draw_cost_vs_time, clustered())
    ax = fig.axes[0]
    far = [t for t in ax.texts if t.arrow_patch is not None]
    assert far, "a clump of 10 leaves some numbers beside their markers only"
    for text in far:  # the line starts at its own configuration's point
        number = int(text.get_text())
        (x, y), = ax.containers[number - 1].lines[0].get_xydata()
        assert text.xy == pytest.approx((x, y))


def test_an_axis_spanning_decades_is_logarithmic_and_says_so():
    ax = figure_style.render(cost_plots.draw_cost_vs_time, spread()).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel().endswith(", log") and ax.get_ylabel().endswith(", log")
    narrow = [r for r in spread() if r["config_id"] < 3]  # 4 to 9 s: linear, from 0
    ax = figure_style.render(cost_plots.draw_cost_vs_time, narrow).axes[0]
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0


def downpour_status(seed):
    """A Downpour job's events: epoch ends below the target, the stop rule's checks between them, the crossing at a
    check (0.8512 >= 0.85), and the last epoch end after it (0.8467: the workers trained on until they noticed)."""
    created, events, t, accuracy = 1000.0, [{"event": "created", "at": 1000.0}], 1000.0, 0.6
    for epoch in range(1, 6):
        t += 4.0 + 0.3 * seed
        accuracy = min(0.846, accuracy + 0.06)
        events += [{"event": "epoch", "epoch": epoch, "accuracy": accuracy, "test_accuracy": accuracy - 0.01, "at": t},
                   {"event": "check", "samples": epoch * 1000, "accuracy": accuracy - 0.002, "at": t + 1.0}]
    crossed = t + 2.0
    events += [{"event": "check", "samples": 6000, "accuracy": 0.8512, "test_accuracy": 0.8431, "at": crossed},
               {"event": "epoch", "epoch": 6, "accuracy": 0.8467, "test_accuracy": 0.8402, "at": crossed + 0.8}]
    done = {"at": crossed, "validation_accuracy": 0.8512, "test_accuracy": 0.8431}
    return {"created_at": created, "events": events, "done": done}


def accuracy_run(config_id, round_):
    status = downpour_status(round_)
    crossing = batch_runs.crossing(status)
    return {"config_id": config_id, "configuration": f"number_of_workers={config_id + 1}", "round": round_,
            "varying": {"number_of_workers": config_id + 1},
            "config": {"target_accuracy": TARGET, "dataset": "fashion-mnist"}, "state": "done",
            "reached_target": True, "time_to_target_s": crossing[0], "curve": batch_runs.curve(status),
            "test_curve": batch_runs.curve(status, "test_accuracy"), "crossing": crossing}


def test_the_curve_holds_the_checks_the_target_is_read_from_and_the_crossing():
    status = downpour_status(1)
    curve = batch_runs.curve(status)
    assert len(curve) == 12 and max(a for _, a in curve) == 0.8512  # 6 epoch ends and 6 checks, in time order
    assert curve == sorted(curve)
    assert batch_runs.crossing(status) == [status["done"]["at"] - 1000.0, 0.8512]
    assert batch_runs.crossing({**status, "done": None}) is None


def test_a_round_that_reached_the_target_is_drawn_on_validation_ending_at_its_crossing_on_the_target_line():
    runs = [accuracy_run(c, r) for c in range(2) for r in (1, 2)]
    fig = figure_style.render(plots.draw_accuracy_vs_time, runs)
    ax = next(a for a in fig.axes if a.get_ylabel() == "validation accuracy")
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 1 and line.get_linestyle() != "--"]
    assert len(lines) == len(runs)
    for line, run in zip(lines, runs):
        xs, ys = line.get_xdata(), line.get_ydata()
        assert (xs[-1], ys[-1]) == pytest.approx(tuple(run["crossing"]))  # the line ends at its crossing
        assert ys[-1] >= TARGET and max(xs) == pytest.approx(run["crossing"][0])  # nothing after it
    marks = [line for line in ax.get_lines() if len(line.get_xdata()) == 1]
    drawn = sorted((m.get_xdata()[0], m.get_ydata()[0]) for m in marks)
    for (x, y), (cx, cy) in zip(drawn, sorted(tuple(run["crossing"]) for run in runs), strict=True):
        assert (x, y) == pytest.approx((cx, cy))
    legend = [text.get_text() for text in fig.findobj(Legend)[0].get_texts()]
    assert "target 0.85 (validation)" in legend


def test_a_run_without_a_crossing_keeps_its_whole_curve():
    run = {**accuracy_run(0, 1), "crossing": None, "reached_target": False, "time_to_target_s": None}
    assert plots.until_crossing(run) == run["curve"]
