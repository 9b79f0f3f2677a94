"""One PNG per run of its workers' resource series: CPU (cores), RSS (MB), store bytes sent and received (bytes/s).

The series come with the run's status (`profile=1`: each worker's `profile:<worker>` record, profile/); the
plot has the four series one above the other on a shared time axis (seconds since each worker's first call
began), one line per worker, and each series' burst threshold dashed (profile/bursts.py THRESHOLDS; memory's
is relative to each call's start, so not drawn). Files go to `profiles/run-NNN.png` in the batch's folder
(NNN: the run's index in runs.json); the run record keeps the file name, not the series.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from faasgd.batch.plots import DPI, colour
from faasgd.profile import SERIES, THRESHOLDS

AXES = {"cpu": "CPU (cores)", "rss": "RSS (MB)", "tx": "sent to stores (B/s)", "rx": "received (B/s)"}


def plot_run_profile(run: dict, path) -> str | None:
    """The run's four series, one line per worker; None when no worker has a profile."""
    profiles = [(i, p) for i, p in enumerate(run.get("profile") or []) if p and p.get("t")]
    if not profiles:
        return None
    fig = Figure(figsize=(7.0, 7.5), layout="constrained")
    axes = fig.subplots(len(SERIES), 1, sharex=True)
    for ax, name in zip(axes, SERIES):
        for worker, profile in profiles:
            ax.plot(profile["t"], profile[name], color=colour(worker, len(profiles)), linewidth=0.9,
                    marker="." if len(profile["t"]) < 60 else None, label=f"worker {worker}")  # a short run: points
        if name != "rss":
            ax.axhline(THRESHOLDS[name], color="grey", linestyle="--", linewidth=0.8)
        ax.set_ylabel(AXES[name])
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize="small")
    axes[0].set_title(f"{run.get('configuration', '')} round {run.get('round', '')}", fontsize="medium")
    axes[-1].set_xlabel("seconds since the worker's first call began (burst threshold dashed)")
    fig.savefig(path, dpi=DPI)
    return Path(path).name


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
