"""A batch's folder and everything written into it, every value through the batch's Redactor.

`results/<time>-<name>/` unless `--out`: matrix.yml (the matrix file's text), meta.json, runs.json,
runs.csv, output.txt, summary.md and the plots. A store URL's password reaches none of them.
A stacking batch (runs with workload "stacking") has its own columns and tables (stacking_report.py) and
one plot, the time of each phase per configuration (stacking_plots.py).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from faasgd.batch import bounds, plots, profile_plots, report, stacking_plots, stacking_report
from faasgd.batch.matrix import check_name
from faasgd.batch.redact import Redactor
from faasgd.errors import ConfigError

RESULTS_DIR = Path("results")
KINDS = {"emnist": (report.EMNIST, plots.write_plots), "stacking": (stacking_report.STACKING, stacking_plots.write_plots)}


def workload_of(runs: list[dict]) -> str:
    """The batch's one workload (a matrix has one), from its run records; emnist's records carry none."""
    return next((run["workload"] for run in runs if run.get("workload")), "emnist")


def output_folder(out: str | None, name: str, started: datetime.datetime) -> Path:
    """`--out` where the user says (a folder that is, or can be made, there: bounds.check_out); else
    results/<time>-<name>, always under results/ (name: a plain name)."""
    if out is not None:
        path = Path(out)
        if not str(out).strip():
            raise ConfigError("out", "must be a folder path, got an empty string")
        bounds.check_out(path)
        return path
    path = RESULTS_DIR / f"{started:%Y%m%d-%H%M%S}-{check_name(name)}"
    if path.parent != RESULTS_DIR:  # check_name allows no separator; this keeps it so
        raise ConfigError("name", f"the default output folder {path} would leave {RESULTS_DIR}/")
    return path


def make_folder(out: Path) -> None:
    """The batch's folder, made with its parents; ConfigError('out') naming it when it cannot be."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError("out", f"cannot make the folder {out}: {error.strerror or error}") from None


def write_matrix_copy(out: Path, matrix_text: str, redactor: Redactor) -> None:
    (out / "matrix.yml").write_text(redactor.text(matrix_text), encoding="utf-8")


def write_outputs(out: Path, runs: list[dict], meta: dict, redactor: Redactor) -> dict[str, str]:
    """Write meta.json, runs.json, runs.csv, output.txt, the plots and summary.md; the plots written."""
    runs, meta = redactor.value(runs), redactor.value(meta)
    safe = lambda value: redactor.text(str(value))  # noqa: E731 (anything JSON cannot hold, as redacted text)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=safe))
    kind, write_plots = KINDS[workload_of(runs)]
    runs = profile_plots.write_profile_plots(runs, out)  # profiles/run-NNN.png; the series leave the records
    (out / "runs.json").write_text(json.dumps(runs, indent=1, default=safe))
    report.write_runs_csv(runs, out / "runs.csv", kind.columns, kind.config_keys)
    report.write_output_txt(runs, meta, out / "output.txt", kind)
    written = write_plots(runs, out)
    report.write_summary_md(runs, meta, out / "summary.md", written, kind)
    return written
