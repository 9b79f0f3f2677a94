"""One PNG per run of its workers' resource series: CPU (cores), RSS (MB), store bytes sent and received (B/s).

The series come with the run's status (`profile=1`: each worker's `profile:<worker>` record, profile/); the
plot has the four series one above the other on a shared time axis (seconds since each worker's first call
began), one line per worker, and each series' burst threshold dashed (profile/bursts.py THRESHOLDS; memory's
is relative to each call's start, so not drawn). It is drawn in figure_style's look, the workers' legend
below the axes. Files go to `profiles/run-NNN.png` in the batch's folder (NNN: the run's index in runs.json);
the run record keeps the file name, not the series.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter

from faasgd.batch.figure_style import LegendText, add_legend, add_title, look, new_panels, write
from faasgd.profile import SERIES, THRESHOLDS

AXES = {"cpu": "CPU (cores)", "rss": "RSS (MB)", "tx": "sent to stores (B/s)", "rx": "received (B/s)"}
SERIES_HEIGHT = 1.6  # inches per series' axes


def draw_run_profile(run: dict) -> Figure | None:
    """The run's four series, one line per worker; None when no worker has a profile."""
    profiles = [(i, p) for i, p in enumerate(run.get("profile") or []) if p and p.get("t")]
    if not profiles:
        return None
    legend = LegendText(tuple(f"worker {worker}" for worker, _ in profiles) + ("burst threshold",))
    fig, (sub,) = new_panels([legend], axes_height=SERIES_HEIGHT * len(SERIES) + 0.6)
    axes = sub.subplots(len(SERIES), 1, sharex=True)
    for ax, name in zip(axes, SERIES):
        for n, (worker, profile) in enumerate(profiles):
            style = look(n)
            ax.plot(profile["t"], profile[name], color=style["color"], linewidth=0.9,
                    marker=style["marker"] if len(profile["t"]) < 60 else None, markersize=3)  # a short run: points
        if name != "rss":
            ax.axhline(THRESHOLDS[name], color="0.4", linestyle="--", linewidth=0.8)
        ax.set_ylabel(AXES[name])
        if name in ("tx", "rx"):
            ax.yaxis.set_major_formatter(EngFormatter())  # 200 k, 1.5 M: bytes/s span orders of magnitude
    axes[-1].set_xlabel("time since the worker's first call began (s)")
    handles = [Line2D([], [], linewidth=0.9, markersize=3, **look(n)) for n in range(len(profiles))]
    handles.append(Line2D([], [], color="0.4", linestyle="--", linewidth=0.8))
    add_legend(sub, handles, legend)
    add_title(fig, f"Resources per worker: {run.get('configuration', '')}, round {run.get('round', '')}")
    return fig


def plot_run_profile(run: dict, path) -> str | None:
    return write(draw_run_profile, path, run)


def write_profile_plots(runs: list[dict], folder) -> list[dict]:
    """Each run's profile plot into `folder`/profiles/; the runs with `profile_plot` (a path in the folder, or
    None) in place of their series."""
    out = []
    for index, run in enumerate(runs, start=1):
        run = dict(run)
        series = run.pop("profile", None)
        name = None
        if series:
            (Path(folder) / "profiles").mkdir(exist_ok=True)
            written = plot_run_profile({**run, "profile": series}, Path(folder) / "profiles" / f"run-{index:03d}.png")
            name = f"profiles/{written}" if written else None
        out.append({**run, "profile_plot": name})
    return out
