"""A stacking batch's tables: runs.csv's columns, output.txt's per-configuration table, summary.md's results.

The measures are stacking-driver's answer, flat (faasgd.stacking.flow.MEASURES): ensemble_score,
best_base_score, base_scores (one per trainer), the four phases' seconds (upload_s, train_s, reduce_s,
meta_train_s), total_s and call_retries. Means and stdevs are over the rounds that finished.
"""

from __future__ import annotations

from faasgd.batch.report import Kind, by_configuration, finished_values, label, md, mean, num, stdev
from faasgd.stacking.config import FIELDS
from faasgd.stacking.flow import MEASURES, PHASES

CONFIG_KEYS = tuple(FIELDS)
CSV_COLUMNS: tuple[str, ...] = (
    ("config_id", "configuration", "round") + CONFIG_KEYS + ("job_id", "state", "error") + MEASURES
)
TIMES = ("total_s", *PHASES)
TABLE = (("Total", "total_s", "{:.3f}"), ("Upload", "upload_s", "{:.3f}"), ("Train", "train_s", "{:.3f}"),
         ("Reduce", "reduce_s", "{:.3f}"), ("Meta-train", "meta_train_s", "{:.3f}"),
         ("Ensemble", "ensemble_score", "{:.4f}"), ("Best base", "best_base_score", "{:.4f}"),
         ("Retries", "call_retries", "{:.1f}"))  # header, measure, format


def configuration_table(runs_of_one_config: list[dict]) -> str:
    """Round | Total | Upload | Train | Reduce | Meta-train (s) | Ensemble | Best base | Retries, then Avg, Stdev."""
    runs = sorted(runs_of_one_config, key=lambda r: r["round"])
    rows = [("Round", *(header for header, _, _ in TABLE))]
    for run in runs:
        if run.get("state") == "done":
            rows.append((str(run["round"]), *(num(run.get(key), fmt) for _, key, fmt in TABLE)))
        else:
            rows.append((str(run["round"]), "failed", *("-" for _ in TABLE[1:])))
    for name, stat in (("Avg", mean), ("Stdev", stdev)):
        rows.append((name, *(num(stat(finished_values(runs, key)), fmt) for _, key, fmt in TABLE)))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def table_notes(runs_of_one_config: list[dict]) -> list[str]:
    """One line per round that failed, with its error."""
    return [f"round {run['round']}: failed: {run.get('error') or 'no error recorded'}"
            for run in sorted(runs_of_one_config, key=lambda r: r["round"]) if run.get("state") != "done"]


def subject(fixed: dict[str, str]) -> str:
    return (f"stacking ensemble training: a set of {fixed.get('n_samples', 'varying')} x "
            f"{fixed.get('n_features', 'varying')} (n_samples x n_features), {fixed.get('cv_folds', 'varying')} cv folds")


def results(runs: list[dict]) -> list[str]:
    """Per configuration: finished / runs, each time's mean ± stdev, the ensemble's and the best base's score."""
    lines = ["Seconds: mean ± sample stdev over the rounds that finished; scores are accuracy on the held-out rows"
             " (means). Per-run values are in `runs.csv`, per-round tables in `output.txt`.", "",
             "| Configuration | Done / runs | Total (s) | Upload (s) | Train (s) | Reduce (s) | Meta-train (s)"
             " | Ensemble score | Best base score | Call retries |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for group in by_configuration(runs):
        times = []
        for key in TIMES:
            values = finished_values(group, key)
            text = num(mean(values), "{:.3f}")
            times.append(text + (f" ± {stdev(values):.3f}" if stdev(values) is not None else ""))
        done = sum(run.get("state") == "done" for run in group)
        lines.append(f"| {md(label(group[0]))} | {done} / {len(group)} | {' | '.join(times)}"
                     f" | {num(mean(finished_values(group, 'ensemble_score')), '{:.4f}')}"
                     f" | {num(mean(finished_values(group, 'best_base_score')), '{:.4f}')}"
                     f" | {num(mean(finished_values(group, 'call_retries')), '{:.1f}')} |")
    return lines


STACKING = Kind(CSV_COLUMNS, CONFIG_KEYS, configuration_table, table_notes, subject, results)
