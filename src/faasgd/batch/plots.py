"""A batch's plots as PNG files: accuracy against time, time to target against workers and period.

Figures are built with `matplotlib.figure.Figure` and written by the Agg canvas, so no display and
no pyplot global state are involved (and the process's matplotlib backend is left alone). Each
plot function returns the file name it wrote, or None when the batch has nothing to show on its
axis. Time means leave out runs that failed or never reached the target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from faasgd.batch.report import by_configuration, cell, label, mean, stdev, times_to_target

FIGSIZE = (7.0, 4.5)  # inches
DPI = 110


def value(run: dict, key: str) -> Any:
    """A run's value for a matrix key: the varying dict, then its config, then the record itself."""
    if key in (run.get("varying") or {}):
        return run["varying"][key]
    config = run.get("config") or {}
    return config[key] if key in config else run.get(key)


def varies(runs: list[dict], key: str) -> bool:
    return len({cell(value(run, key)) for run in runs}) > 1


def group_label(run: dict, exclude: set[str]) -> str:
    """The run's varying keys other than `exclude`, as "key=value ..."; "all runs" when none."""
    parts = [f"{k}={cell(v)}" for k, v in (run.get("varying") or {}).items() if k not in exclude]
    return " ".join(parts) or "all runs"


def colour(index: int, count: int):
    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    return cmap(index % cmap.N)


def targets(runs: list[dict]) -> list[float]:
    """The distinct target accuracies below 1.0 (1.0 means "run every epoch", no target)."""
    found = {(run.get("config") or {}).get("target_accuracy") for run in runs}
    return sorted(t for t in found if t is not None and t < 1.0)


def target_text(runs: list[dict]) -> str:
    found = targets(runs)
    return "validation accuracy " + "/".join(f"{t:g}" for t in found) if found else "the target"


def new_figure() -> tuple[Figure, Any]:
    fig = Figure(figsize=FIGSIZE, layout="constrained")
    return fig, fig.subplots()


def save(fig: Figure, path) -> str:
    fig.savefig(path, dpi=DPI)
    return Path(path).name


def plot_accuracy_vs_time(runs: list[dict], path) -> str | None:
    """Validation accuracy against seconds since the job was created (store clock): one colour per configuration,
    round 1 solid, later rounds faint; the target as a dashed line. None when no run has a curve."""
    groups = [g for g in by_configuration(runs) if any(run.get("curve") for run in g)]
    if not groups:
        return None
    fig, ax = new_figure()
    for i, group in enumerate(groups):
        first = True
        for run in group:
            if not run.get("curve"):
                continue
            seconds, accuracy = zip(*run["curve"])
            ax.plot(seconds, accuracy, color=colour(i, len(groups)), marker="o" if first else None,
                    markersize=3, linewidth=1.8 if first else 1.0, alpha=1.0 if first else 0.35,
                    label=label(run) if first else None)
            first = False
    for target in targets(runs):
        ax.axhline(target, color="0.3", linestyle="--", linewidth=1.0, label=f"target {target:g}")
    ax.set_xlim(left=0)
    ax.set_xlabel("time since the job was created (s)")
    ax.set_ylabel("validation accuracy of the global model")
    datasets = sorted({str((run.get("config") or {}).get("dataset")) for run in runs})
    ax.set_title(f"Validation accuracy over time, {'/'.join(datasets)} (first round solid, later rounds faint)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", ncol=2 if len(groups) > 8 else 1)
    return save(fig, path)


def plot_time_lines(runs: list[dict], path, x_key: str, exclude: set[str], x_label: str, log_x: bool) -> str | None:
    """Mean time to target (error bars: sample stdev) against `x_key`, one line per other varying
    combination; None when no run reached the target."""
    lines: dict[str, dict[float, list[float]]] = {}
    counts: dict[tuple[str, float], int] = {}  # runs per point, to mark points where some missed
    for run in sorted(runs, key=lambda r: r["config_id"]):
        name, x = group_label(run, exclude), value(run, x_key)
        lines.setdefault(name, {}).setdefault(x, []).extend(times_to_target([run]))
        counts[name, x] = counts.get((name, x), 0) + 1
    if not any(times for points in lines.values() for times in points.values()):
        return None
    fig, ax = new_figure()
    xs_all = sorted({x for points in lines.values() for x in points})
    for i, (name, points) in enumerate(lines.items()):
        xs = [x for x in sorted(points) if points[x]]
        if not xs:
            continue
        ys = [mean(points[x]) for x in xs]
        errors = [stdev(points[x]) or 0.0 for x in xs]
        ax.errorbar(xs, ys, yerr=errors, color=colour(i, len(lines)), marker="o", linewidth=1.8,
                    capsize=4, label=name)
        for x, y in zip(xs, ys):
            if len(points[x]) < counts[name, x]:
                ax.annotate(f"{len(points[x])}/{counts[name, x]} reached", (x, y), xytext=(6, 6),
                            textcoords="offset points", fontsize=7, color=colour(i, len(lines)))
    if log_x:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(xs_all)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_ylim(bottom=0)
    ax.set_xlabel(x_label)
    ax.set_ylabel("time to target (s)")
    ax.set_title(f"Time to reach {target_text(runs)} (mean ± stdev over rounds that reached it)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2 if len(lines) > 8 else 1)
    return save(fig, path)


def plot_time_vs_workers(runs: list[dict], path) -> str | None:
    """Mean time to target against number_of_workers, one line per other varying combination;
    None when number_of_workers does not vary or no run reached the target."""
    if not varies(runs, "number_of_workers"):
        return None
    return plot_time_lines(runs, path, "number_of_workers", {"number_of_workers"}, "number of workers", log_x=False)


def plot_time_vs_period(runs: list[dict], path) -> str | None:
    """Mean time to target against n_fetch (n_push when only it varies), log x axis, one line per
    number_of_workers and other varying keys; None when neither n_fetch nor n_push varies."""
    if not (varies(runs, "n_fetch") or varies(runs, "n_push")):
        return None
    if all(value(run, "n_fetch") == value(run, "n_push") for run in runs):
        x_key, exclude = "n_fetch", {"n_fetch", "n_push"}
        x_label = "n_fetch = n_push (minibatches between fetches and pushes)"
    elif varies(runs, "n_fetch"):
        x_key, exclude, x_label = "n_fetch", {"n_fetch"}, "n_fetch (minibatches between fetches)"
    else:
        x_key, exclude, x_label = "n_push", {"n_push"}, "n_push (minibatches between pushes)"
    return plot_time_lines(runs, path, x_key, exclude, x_label, log_x=True)


def write_plots(runs: list[dict], folder) -> dict[str, str]:
    """Writes the plots that apply into `folder`; returns {plot name: file name} for those written."""
    plots = {
        "accuracy_vs_time": plot_accuracy_vs_time,
        "time_vs_workers": plot_time_vs_workers,
        "time_vs_period": plot_time_vs_period,
    }
    written = {}
    for name, plot in plots.items():
        file_name = plot(runs, Path(folder) / f"{name}.png")
        if file_name:
            written[name] = file_name
    return written
