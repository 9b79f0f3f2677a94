"""Every plot a batch writes stays readable from 1 to 24 configurations: drawn in the shared style, every text
artist (titles, axis labels, tick labels, legend texts, annotations) lies inside the figure, no legend covers
an axes' data area, and the tick labels of an axis do not run into each other.

The run records are synthetic, in the shape batch/runs.py gives them (see test_batch_report.py), with the
long configuration labels a four-key matrix has."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text

from faasgd.batch import cost_plots, figure_style, plots, profile_plots, stacking_plots
from faasgd.config import TrainConfig

COUNTS = (1, 4, 12, 24)
KEYS = {"number_of_workers": (1, 2, 4), "store": ("redis", "memcached"), "n_fetch": (1, 25), "batch_size": (32, 128)}
ROUNDS = 3
SLACK = 0.5  # pixels: rounding of an extent


def varying_dicts(count: int) -> list[dict]:
    """`count` distinct settings of the matrix keys: none vary for 1, then the first keys' product."""
    if count == 1:
        return [{}]
    fastest_first = itertools.product(*reversed(KEYS.values()))  # the first key changes from one setting to the next
    combos = [dict(zip(KEYS, reversed(values))) for values in fastest_first]
    varying = combos[:count]
    used = [k for k in KEYS if len({v[k] for v in varying}) > 1]
    return [{k: v[k] for k in used} | ({"n_push": v["n_fetch"]} if "n_fetch" in used else {}) for v in varying]


def make_run(config_id: int, varying: dict, round_: int) -> dict:
    """One finished run that reached 0.85 (round 2 of every third configuration missed it), with cost."""
    config = TrainConfig(**{k: v for k, v in varying.items() if k != "store"}, seed=round_).to_dict()
    config.update(hidden_sizes=[256, 128], target_accuracy=0.85, dataset="fashion-mnist")
    workers = config["number_of_workers"]
    reached = not (config_id % 3 == 2 and round_ == 2)
    ttt = 12.0 / workers + config["n_fetch"] * 0.05 + config_id * 0.2 + round_ * 0.37
    final = 0.852 if reached else 0.84
    wall = ttt + 1.0 if reached else 30.0
    configuration = " ".join(f"{k}={v}" for k, v in varying.items()) or "single configuration"
    return {
        "config_id": config_id, "configuration": configuration, "varying": varying, "round": round_,
        "config": config, "store": varying.get("store", "redis"), "job_id": f"j{config_id}-{round_}",
        "state": "done", "error": None, "reached_target": reached, "time_to_target_s": ttt if reached else None,
        "wall_s": wall, "final_validation_accuracy": final,
        "curve": [[ttt * f, 0.55 + (final - 0.55) * f] for f in (0.1, 0.3, 0.55, 0.8, 1.0)],
        "cost_usd": 2.1e-5 * workers * wall / 10 + 3e-7 * round_, "cost_faas_usd": 1.9e-5 * workers * wall / 10,
        "cost_store_usd": 2e-6 * wall / 10, "billed_gb_s": 0.9 * workers * wall / 10, "requests": 3 * workers,
    }


def emnist_runs(count: int) -> list[dict]:
    return [make_run(i, varying, r) for i, varying in enumerate(varying_dicts(count)) for r in range(1, ROUNDS + 1)]


def stacking_runs(count: int) -> list[dict]:
    """A stacking batch of `count` configurations with its phase measures (round 3 of configuration 0 failed)."""
    out = []
    for i, varying in enumerate(varying_dicts(count)):
        label = " ".join(f"{k}={v}" for k, v in varying.items()) or "single configuration"
        for r in range(1, ROUNDS + 1):
            failed = (i, r) == (0, 3)
            phases = dict(upload_s=0.2 + 0.01 * i, train_s=1.5 + 0.1 * r, reduce_s=0.1, meta_train_s=0.3)
            out.append({"config_id": i, "configuration": label, "varying": varying, "round": r,
                        "workload": "stacking", "state": "failed" if failed else "done",
                        **({k: None for k in phases} if failed else phases),
                        "total_s": None if failed else sum(phases.values()) + 0.2})
    return out


def profile_run(workers: int) -> dict:
    """One run whose `workers` workers each have a profile series."""
    series = lambda w: {"start": 1.0, "t": [0.1 * i for i in range(40)],  # noqa: E731
                        "cpu": [0.3 + 0.01 * w] * 40, "rss": [150.0 + w] * 40, "tx": [1e5 * (i % 3) for i in range(40)],
                        "rx": [2e5 * (i % 2) for i in range(40)]}
    return {"configuration": "number_of_workers=4 n_fetch=25 n_push=25 store=memcached batch_size=128", "round": 2,
            "profile": [series(w) for w in range(workers)]}


def figures(count: int) -> dict[str, Figure]:
    """Every plot for a batch of `count` configurations (and a run of `count` workers), drawn in the style."""
    runs = emnist_runs(count)
    draws = {
        "accuracy_vs_time": (plots.draw_accuracy_vs_time, runs),
        "time_vs_workers": (plots.draw_time_vs_workers, runs),
        "time_vs_period": (plots.draw_time_vs_period, runs),
        "cost_vs_time": (cost_plots.draw_cost_vs_time, runs),
        "phases": (stacking_plots.draw_phases, stacking_runs(count)),
        "profile": (profile_plots.draw_run_profile, profile_run(count)),
    }
    drawn = {name: figure_style.render(draw, arg) for name, (draw, arg) in draws.items()}
    return {name: fig for name, fig in drawn.items() if fig is not None}


def drawn_texts(fig: Figure) -> tuple[list[Text], object]:
    """The text artists a draw of `fig` puts on the canvas (a tick label outside the view is not drawn, though
    its axis holds it), and the renderer that drew them."""
    drawn: list[Text] = []
    draw = Text.draw

    def record(text, renderer):
        if text.get_visible() and text.get_text().strip():
            drawn.append(text)
        return draw(text, renderer)

    Text.draw = record
    try:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
    finally:
        Text.draw = draw
    return drawn, canvas.get_renderer()


@pytest.fixture(scope="module", params=COUNTS)
def drawn(request) -> tuple[int, dict[str, tuple[Figure, list[Text], object]]]:
    """Every plot for one count, drawn once: {name: (figure, its drawn texts, renderer)}."""
    return request.param, {name: (fig, *drawn_texts(fig)) for name, fig in figures(request.param).items()}


def test_every_text_artist_lies_inside_the_figure(drawn):
    count, plots_drawn = drawn
    for name, (fig, texts, renderer) in plots_drawn.items():
        assert len(texts) > 10, f"{name}: too few texts drawn to be a labelled plot"
        bounds = fig.bbox
        for text in texts:
            box = text.get_window_extent(renderer)
            inside = (box.x0 >= bounds.x0 - SLACK and box.y0 >= bounds.y0 - SLACK
                      and box.x1 <= bounds.x1 + SLACK and box.y1 <= bounds.y1 + SLACK)
            assert inside, f"{name} with {count}: {text.get_text()!r} at {box.bounds} leaves {bounds.bounds}"


def test_no_legend_covers_an_axes_and_no_labels_collide(drawn):
    count, plots_drawn = drawn
    for name, (fig, texts, renderer) in plots_drawn.items():
        legends = [legend for legend in fig.findobj(Legend) if legend.get_visible()]
        assert legends, f"{name} with {count}: no legend"
        for legend, ax in itertools.product(legends, fig.axes):
            assert not legend.get_window_extent(renderer).overlaps(ax.bbox), f"{name} with {count}: legend on axes"
        for ax in fig.axes:
            for group in (ax.get_xticklabels(), ax.get_yticklabels(), ax.texts):  # ax.texts: annotations
                boxes = [t.get_window_extent(renderer) for t in group if t in texts]
                for a, b in itertools.combinations(boxes, 2):
                    assert not a.overlaps(b), f"{name} with {count}: labels collide in {ax.get_title()!r}"


def test_every_plot_is_drawn_for_a_full_batch_in_the_one_style(drawn):
    count, plots_drawn = drawn
    for name, (fig, _, _) in plots_drawn.items():
        assert (fig.get_figwidth(), fig.dpi) == (figure_style.WIDTH, figure_style.DPI), name
    expected = {"accuracy_vs_time", "cost_vs_time", "phases", "profile"}
    expected |= {"time_vs_workers"} if count > 1 else set()  # 1: nothing varies; 4: workers and store
    expected |= {"time_vs_period"} if count > 4 else set()
    assert set(plots_drawn) == expected
