"""A batch's written outputs: runs.csv, output.txt (per-configuration tables) and summary.md.

Every function takes run records (plain dicts, one per job run, see `CSV_COLUMNS`) and writes or
returns text; nothing here runs jobs. Any numeric field of a run may be None (failed, or never
reached the target). Means and stdevs of time to target are over the runs that reached the target;
the other means are over the runs that finished (state "done") and have a value.
What differs by workload (columns, tables, summary lines) is a `Kind`: EMNIST here, STACKING in
stacking_report.py.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from faasgd.batch import one_class
from faasgd.config import FIELDS
from faasgd.cost import Prices
from faasgd.minibatch import batch_note
from faasgd.job.result import MEASURES

CONFIG_KEYS = tuple(FIELDS)
COST_SHOWN = ("billed_gb_s", "requests", "cold_starts", "cost_usd")  # summary.md's billing columns (faasgd.cost)
CSV_COLUMNS: tuple[str, ...] = (
    ("config_id", "configuration", "round") + CONFIG_KEYS + ("job_id", "state", "error", "clock", "cpu_clock")
    + MEASURES + ("placement", "link_bytes")
)  # one column per name: `store` is the config key (schema.py documents every column)
PLOT_TITLES = {
    "accuracy_vs_time": "Validation accuracy against time",
    "time_vs_workers": "Time to target against the number of workers",
    "time_vs_period": "Time to target against the fetch/push period",
    "phases": "Time of each phase per configuration",
    "cost_vs_time": "Cost against time per configuration",
}


def cell(value: Any) -> str:
    """One value as CSV/table text: None empty, lists comma-joined ("256,128")."""
    if value is None:
        return ""
    if isinstance(value, dict) or isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))  # stacking's models: [{"model", "params"}]
    if isinstance(value, (list, tuple)):
        return ",".join(cell(v) for v in value)
    return str(value)


def placement_cell(placement: list | None) -> str:
    """Which replica ran each worker, by worker id, ';'-joined; an unknown replica is an empty field."""
    return "" if placement is None else ";".join(cell(p) for p in placement)


def write_runs_csv(runs: list[dict], path, columns: tuple[str, ...] = CSV_COLUMNS,
                   config_keys: tuple[str, ...] = CONFIG_KEYS) -> None:
    """runs.csv: a header, then one row per run in the given order; None is an empty cell."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for run in runs:
            config = run.get("config") or {}
            writer.writerow([placement_cell(run.get(c)) if c == "placement" else
                             cell(config.get(c) if c in config_keys else run.get(c)) for c in columns])


def by_configuration(runs: Iterable[dict]) -> list[list[dict]]:
    """The runs grouped by config_id, groups in config_id order, runs in round order."""
    groups: dict[int, list[dict]] = {}
    for run in runs:
        groups.setdefault(run["config_id"], []).append(run)
    return [sorted(groups[i], key=lambda r: r["round"]) for i in sorted(groups)]


def label(run: dict) -> str:
    """The configuration's label; a matrix where nothing varies has an empty one."""
    return run.get("configuration") or f"configuration {run['config_id']}"


def reached(run: dict) -> bool:
    """True when the run finished and has a time to target."""
    return run.get("state") == "done" and bool(run.get("reached_target")) and run.get("time_to_target_s") is not None


def times_to_target(runs: Iterable[dict]) -> list[float]:
    """The times to target of the runs that reached it."""
    return [run["time_to_target_s"] for run in runs if reached(run)]


def finished_values(runs: Iterable[dict], key: str) -> list[float]:
    """`key` of the runs that finished (state "done") and have it."""
    return [run[key] for run in runs if run.get("state") == "done" and run.get(key) is not None]


def mean(values: list[float]) -> float | None:
    return statistics.mean(values) if values else None


def stdev(values: list[float]) -> float | None:
    """The sample standard deviation; None for fewer than 2 values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def placement_summary(placement: list | None) -> str:
    """Workers per replica, in order of first use: "emnist-train-1 (2), emnist-train-2 (1)"."""
    if not placement:
        return "-"
    counts: dict[str, int] = {}
    for replica in placement:
        name = "unknown" if replica is None else str(replica)
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} ({n})" for name, n in counts.items())


def per_sample_us(value: float | None) -> float | None:
    """CPU-seconds per sample in µs (the tables' unit)."""
    return None if value is None else value * 1e6


def configuration_table(runs_of_one_config: list[dict]) -> str:
    """Round | Time | Iterations | Accuracy | Samples/s | CPU µs/sample | Store CPU s | Placement, one row per round,
    then Avg and Stdev.

    Time is the time to target in seconds ("-" not reached, "failed" for a failed run); Iterations
    are epochs; Accuracy is the test accuracy of the job's model (kept at the crossing); CPU µs/sample is the job's
    cpu_s_per_sample (workers and store, counted), Store CPU s its store_cpu_s. Avg/Stdev of Time are over the
    rounds that reached the target, of the other columns over the rounds that finished; "-" when too few.
    """
    runs = sorted(runs_of_one_config, key=lambda r: r["round"])
    header = ("Round", "Time", "Iterations", "Accuracy", "Samples/s", "CPU µs/sample", "Store CPU s", "Placement")
    rows = [header]
    for run in runs:
        failed = run.get("state") != "done"
        rows.append((
            str(run["round"]),
            "failed" if failed else num(run["time_to_target_s"] if reached(run) else None, "{:.2f}"),
            num(run.get("epochs"), "{:.2f}"), num(run.get("final_test_accuracy"), "{:.4f}"),
            num(run.get("samples_per_s"), "{:,.0f}"), num(per_sample_us(run.get("cpu_s_per_sample")), "{:.2f}"),
            num(run.get("store_cpu_s"), "{:.2f}"), placement_summary(run.get("placement")),
        ))
    columns = [times_to_target(runs)]
    columns += [finished_values(runs, key) for key in ("epochs", "final_test_accuracy", "samples_per_s")]
    columns += [[per_sample_us(v) for v in finished_values(runs, "cpu_s_per_sample")],
                finished_values(runs, "store_cpu_s")]
    formats = ("{:.2f}", "{:.2f}", "{:.4f}", "{:,.0f}", "{:.2f}", "{:.2f}")
    for name, stat in (("Avg", mean), ("Stdev", stdev)):
        rows.append((name, *(num(stat(values), fmt) for values, fmt in zip(columns, formats)), ""))
    widths = [max(len(row[c]) for row in rows) for c in range(len(header) - 1)]
    lines = ["  ".join([c.rjust(w) for c, w in zip(row, widths)] + [row[-1]]).rstrip() for row in rows]
    return "\n".join(lines)


def table_notes(runs_of_one_config: list[dict]) -> list[str]:
    """The batch note when the configuration's rows a step are far above one worker's (minibatch.batch_note), then a
    line per round that failed, missed the target or whose model guesses one class (one_class.note_of), saying which."""
    config = (runs_of_one_config[0].get("config") or {}) if runs_of_one_config else {}
    note = batch_note(config) if config else None
    notes = [note] if note else []
    for run in sorted(runs_of_one_config, key=lambda r: r["round"]):
        target = (run.get("config") or {}).get("target_accuracy")
        if run.get("state") != "done":
            notes.append(f"round {run['round']}: failed: {run.get('error') or 'no error recorded'}")
        elif not reached(run):
            epochs = num(run.get("epochs"), "{:.2f}")
            notes.append(f"round {run['round']}: did not reach {target} (stopped after {epochs} epochs)")
        notes += [f"round {run['round']}: {guess}"] if (guess := one_class.note_of(run)) else []
    return notes


def versions_text(versions: dict) -> str:
    return ", ".join(f"{name} {value}" for name, value in (versions or {}).items()) or "-"


def write_output_txt(runs: list[dict], meta: dict, path, kind: "Kind | None" = None) -> None:
    """output.txt: the batch header, then "== <configuration> ==" and its table per configuration."""
    lines = [
        f"batch     {meta.get('name', '-')}",
        f"matrix    {meta.get('matrix_file', '-')}",
        f"target    {meta.get('target', '-')}",
        f"rounds    {meta.get('rounds', '-')}",
        f"started   {meta.get('started_at', '-')}",
        f"finished  {meta.get('finished_at', '-')}",
        f"versions  {versions_text(meta.get('versions'))}",
        "",
    ]
    kind = kind or EMNIST
    for group in by_configuration(runs):
        lines += [f"== {label(group[0])} ==", kind.table(group), *kind.notes(group), ""]
    Path(path).write_text("\n".join(lines), encoding="utf-8")


def summarize(runs: list[dict]) -> list[dict]:
    """One dict per configuration, in config_id order: counts, then means over the rounds (None if none)."""
    out = []
    for group in by_configuration(runs):
        times = times_to_target(group)
        out.append({
            "config_id": group[0]["config_id"],
            "configuration": label(group[0]),
            "varying": group[0].get("varying") or {},
            "runs": len(group),
            "reached": len(times),
            "failed": sum(run.get("state") != "done" for run in group),
            "time_to_target_mean": mean(times),
            "time_to_target_stdev": stdev(times),
            "time_to_target_min": min(times) if times else None,
            "epochs_mean": mean(finished_values(group, "epochs")),
            "final_test_accuracy_mean": mean(finished_values(group, "final_test_accuracy")),
            "samples_per_s_mean": mean(finished_values(group, "samples_per_s")),
            "staleness_p50_mean": mean(finished_values(group, "staleness_p50")),
            "conflicts_mean": mean(finished_values(group, "conflicts")),
            "cpu_s_per_sample_mean": mean(finished_values(group, "cpu_s_per_sample")),
            "store_cpu_s_mean": mean(finished_values(group, "store_cpu_s")),
            **{f"{key}_mean": mean(finished_values(group, key)) for key in COST_SHOWN},
        })
    return out


def failures(runs: list[dict], meta: dict) -> list[dict]:
    """The batch's failures: meta["failures"] plus any failed run it does not list, by config and round."""
    listed = {(f.get("config_id"), f.get("round")): f for f in meta.get("failures") or []}
    for run in runs:
        if run.get("state") != "done":
            listed.setdefault((run["config_id"], run["round"]), {
                "config_id": run["config_id"], "round": run["round"], "error": run.get("error")})
    return sorted(listed.values(), key=lambda f: (f.get("config_id") or 0, f.get("round") or 0))


def fixed_config(runs: list[dict]) -> dict[str, str]:
    """The config keys (and the store keyword) that have the same value in every run, as text."""
    values: dict[str, set[str]] = {}
    for run in runs:
        for key, value in {"store": run.get("store"), **(run.get("config") or {})}.items():
            values.setdefault(key, set()).add(cell(value))
    return {key: next(iter(v)) for key, v in values.items() if len(v) == 1}


def prices_lines(meta: dict) -> list[str]:
    """The prices the batch's costs are at (meta["prices"]; none for a workload without costs)."""
    if not meta.get("prices"):
        return []
    return [f"- costs priced at {Prices.parse(meta['prices']).describe()} (the matrix's `prices:`; defaults:"
            " AWS Lambda x86 and an ElastiCache cache.t3.micro node, docs/reference/cost.md)"]


def md(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def results_table(summary: list[dict]) -> list[str]:
    lines = [
        "| Configuration | Reached / runs | Time to target (s) | Min (s) | Epochs | Final test accuracy | Samples/s"
        " | Staleness p50 | Conflicts | CPU µs/sample | Store CPU s | GB-s | Requests | Cold starts | Cost (USD) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        time = num(s["time_to_target_mean"], "{:.2f}")
        if s["time_to_target_stdev"] is not None:
            time += f" ± {s['time_to_target_stdev']:.2f}"
        lines.append(
            f"| {md(s['configuration'])} | {s['reached']} / {s['runs']} | {time}"
            f" | {num(s['time_to_target_min'], '{:.2f}')} | {num(s['epochs_mean'], '{:.2f}')}"
            f" | {num(s['final_test_accuracy_mean'], '{:.4f}')} | {num(s['samples_per_s_mean'], '{:,.0f}')}"
            f" | {num(s['staleness_p50_mean'], '{:.1f}')} | {num(s['conflicts_mean'], '{:.1f}')}"
            f" | {num(per_sample_us(s['cpu_s_per_sample_mean']), '{:.2f}')} | {num(s['store_cpu_s_mean'], '{:.2f}')}"
            f" | {num(s['billed_gb_s_mean'], '{:.2f}')} | {num(s['requests_mean'], '{:.1f}')}"
            f" | {num(s['cold_starts_mean'], '{:.1f}')} | {num(s['cost_usd_mean'], '{:.4g}')} |"
        )
    return lines


def emnist_subject(fixed: dict[str, str]) -> str:
    return (f"dataset: {fixed.get('dataset', 'varies')}, target accuracy {fixed.get('target_accuracy', 'varies')},"
            f" at most {fixed.get('max_epochs', 'varies')} epochs")


def emnist_results(runs: list[dict]) -> list[str]:
    return ["Time to target: mean ± sample stdev over the rounds that reached the target; the other columns"
            " are means over the rounds that finished. CPU µs/sample: the workers' and the store's CPU-seconds per"
            " sample trained, counted (`cpu_s_per_sample`); Store CPU s: the store servers' own count over the job."
            " Per-run values are in `runs.csv`, per-round tables in `output.txt`.", "", *results_table(summarize(runs)),
            *one_class.summary_lines([(label(group[0]), group) for group in by_configuration(runs)])]


@dataclass(frozen=True)
class Kind:
    """What a workload's runs show: runs.csv's columns, output.txt's tables, summary.md's lines."""

    columns: tuple[str, ...]  # runs.csv's header
    config_keys: tuple[str, ...]  # the columns read from a run's config (the others from the run record)
    table: Callable[[list[dict]], str]  # output.txt: one configuration's rounds
    notes: Callable[[list[dict]], list[str]]  # output.txt: lines under that table
    subject: Callable[[dict[str, str]], str]  # summary.md's "what" line, from the keys every run shares
    results: Callable[[list[dict]], list[str]]  # summary.md's Results section
    missed: Callable[[dict], bool] = lambda run: False  # a finished run listed as short of its goal


EMNIST = Kind(CSV_COLUMNS, CONFIG_KEYS, configuration_table, table_notes, emnist_subject, emnist_results,
              lambda run: run.get("state") == "done" and not reached(run))


def write_summary_md(runs: list[dict], meta: dict, path, plots: dict[str, str], kind: Kind | None = None) -> None:
    """summary.md: what was run, the results table, failures, the plots, and how to repeat the batch."""
    kind = kind or EMNIST
    name = meta.get("name", "batch")
    matrix = meta.get("matrix") or {}
    fixed = fixed_config(runs)
    labels = {run["config_id"]: label(run) for run in runs}
    lines = [f"# {name}", ""]
    if matrix.get("description"):
        lines += [str(matrix["description"]), ""]
    lines += [
        "## What was run", "",
        f"- matrix: `{meta.get('matrix_file', '-')}`, {len(labels)} configurations × {meta.get('rounds', '-')} rounds"
        f" on the `{meta.get('target', '-')}` target",
        f"- {kind.subject(fixed)}",
        f"- started {meta.get('started_at', '-')}, finished {meta.get('finished_at', '-')}",
        f"- seeds: {', '.join(str(s) for s in meta.get('seeds') or []) or '-'}",
        f"- versions: {versions_text(meta.get('versions'))}",
        f"- fixed configuration: {', '.join(f'{k}={v}' for k, v in fixed.items()) or '-'}",
        *prices_lines(meta),
        "", "## Results", "",
        *kind.results(runs),
        "", "## Failures", "",
    ]
    failed = failures(runs, meta)
    lines += [f"- {md(labels.get(f.get('config_id'), f.get('config_id')))}, round {f.get('round')}:"
              f" {md(f.get('error') or 'no error recorded')}" for f in failed] or ["none"]
    missed = [run for run in runs if kind.missed(run)]
    if missed:
        lines += ["", "Finished without reaching the target:", ""]
        lines += [f"- {md(label(run))}, round {run['round']}" for run in missed]
    if plots:
        lines += ["", "## Plots"]
        for key, file_name in plots.items():
            lines += ["", f"![{PLOT_TITLES.get(key, key)}]({file_name})"]
    lines += [
        "", "## How to repeat", "", "```sh",
        f"./test.sh {meta.get('matrix_file', 'MATRIX')} --rounds {meta.get('rounds', 'N')}"
        f" --target {meta.get('target', 'local')}" + "".join(f" {flag}" for flag in meta.get("target_flags", [])),
        "```", "",
    ]
    Path(path).write_text("\n".join(lines), encoding="utf-8")
