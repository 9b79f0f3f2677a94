"""Results from Python: the runs of test.sh batches (the results database), or of jobs this session ran, as
rows or as a pandas DataFrame.

    api.batches()                                      # `faasgd results list`
    api.results(batches=[3], where={"number_of_workers": 4})   # `faasgd results runs --batch 3 --where ...`
    api.results("results/", as_frame=True)            # a folder holding faasgd.sqlite, or the file itself
    api.results([job_a, job_b], as_frame=True)         # the result records of jobs (waiting for them to end)
    api.compare(3, 4, ["samples_per_s"])               # `faasgd results compare 3 4 --measure samples_per_s`

Costs are as each batch priced them; `prices=["gb_s=0.0000133334"]` prices every run's recorded usage again
(faasgd.cost; keys: request, gb_s, store_hour).
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from faasgd import cost
from faasgd.api import results_store
from faasgd.api.jobs import Job
from faasgd.errors import ConfigError
from faasgd.job.result import MEASURES
from faasgd.stacking import flow as stacking_flow

DB_NAME = Path(results_store.DEFAULT_PATH).name  # what a results folder holds
DEFAULT_MEASURES = ("time_to_target_s", "samples_per_s", "final_test_accuracy", "cpu_s", "cpu_s_per_sample", "tx_bytes",
                    "rx_bytes", "cost_usd")


def database_path(db_or_dir: str | os.PathLike | None = None) -> Path:
    """The results database: `db_or_dir` (the file, or a folder holding faasgd.sqlite), else $FAASGD_RESULTS_DB,
    else results/faasgd.sqlite.

        >>> str(database_path("results/faasgd.sqlite"))
        'results/faasgd.sqlite'
    """
    path = Path(results_store.default_path() if db_or_dir is None else os.fspath(db_or_dir))
    return path / DB_NAME if path.is_dir() else path


def open_results(db_or_dir: str | os.PathLike | None = None) -> sqlite3.Connection:
    """The results database, open (never created); ConfigError('db') naming the path and what writes it.

        >>> with open_results("results/") as db:        # doctest: +SKIP
        ...     db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    """
    path = database_path(db_or_dir)
    try:
        return results_store.open_db(path, create=False)
    except FileNotFoundError:
        raise ConfigError("db", f"no results database at {path} (test.sh writes it; name another with --db PATH, "
                                f"Python: results('path/to/faasgd.sqlite'))") from None


def batches(db_or_dir: str | os.PathLike | None = None, as_frame: bool = False) -> Any:
    """Every batch in the database, oldest first: id, name, target, runs, done, started, finished, folder.

        >>> [b["name"] for b in batches()]        # doctest: +SKIP
        ['workers-sweep', 'codec-study']
    """
    with open_results(db_or_dir) as db:
        return shaped(results_store.batches(db), as_frame)


def results(source: str | os.PathLike | Job | Iterable[Job | Mapping] | None = None, *,
            batches: Iterable[int] | None = None, where: Mapping[str, Any] | None = None,
            prices: Iterable[str] | None = None, as_frame: bool = False) -> Any:
    """Runs as rows (dicts), or a pandas DataFrame with `as_frame=True` (pandas is in the dev extra).

    `source` is the results database (the file, or its folder; default as `faasgd results`), whose runs are
    filtered by `batches` (ids) and `where` (key: value, as `--where KEY=VALUE` compares them); or a Job, or
    jobs and result records, whose results are the rows (each job waited for until it ends).

        >>> frame = results(batches=[3], as_frame=True)             # doctest: +SKIP
        >>> frame.groupby("number_of_workers")["samples_per_s"].mean()   # doctest: +SKIP
    """
    if isinstance(source, (Job, Mapping)) or (source is not None and not isinstance(source, (str, os.PathLike))):
        rows = job_rows([source] if isinstance(source, (Job, Mapping)) else source)
    else:
        with open_results(source) as db:
            rows = results_store.runs(db, batches, {k: results_store.text(v) for k, v in (where or {}).items()})
    return shaped(priced(rows, prices), as_frame)


def job_rows(items: Iterable[Job | Mapping]) -> list[dict]:
    """The result record of each job (waiting for it), or each record as given."""
    rows = []
    for item in items:
        if not isinstance(item, (Job, Mapping)):
            raise ConfigError("source", f"must hold Jobs or result records, got {type(item).__name__}")
        rows.append(item.result() if isinstance(item, Job) else dict(item))
    return rows


def priced(runs: list[dict], prices: Iterable[str] | None) -> list[dict]:
    """The runs with their costs at `prices` ("KEY=USD" each; ConfigError naming a bad one), or as recorded."""
    if not prices:
        return runs
    table = cost.Prices.from_assignments(list(prices))
    return [{**run, **cost.reprice(run, table)} for run in runs]


def shaped(rows: list[dict], as_frame: bool) -> Any:
    """The rows, or a pandas DataFrame of them (one column per key) when `as_frame`."""
    if not as_frame:
        return rows
    try:
        import pandas
    except ImportError:
        raise ConfigError("as_frame", "needs pandas (pip install pandas, or the dev extra); "
                                      "as_frame=False gives the rows as dicts") from None
    return pandas.DataFrame.from_records(rows)


def group_key(run: dict, by: list[str] | None) -> str:
    """The group a run is compared in: its configuration's label, or the values of the keys `by`.

        >>> group_key({"number_of_workers": 4, "n_push": 2}, ["number_of_workers", "n_push"])
        'number_of_workers=4 n_push=2'
    """
    if not by:
        return str(run.get("configuration") or "all runs")
    return " ".join(f"{key}={results_store.text(run.get(key))}" for key in by)


def mean_of(runs: list[dict], measure: str) -> float | None:
    """The measure's mean over the finished runs that have it (None: none has).

        >>> mean_of([{"state": "done", "cpu_s": 2.0}, {"state": "failed", "cpu_s": 9.0}], "cpu_s")
        2.0
    """
    values = [float(r[measure]) for r in runs if r.get("state") == "done" and isinstance(r.get(measure), (int, float))]
    return statistics.fmean(values) if values else None


def compare_runs(runs_a: list[dict], runs_b: list[dict], measures: list[str], by: list[str] | None = None) -> list[dict]:
    """One row per group found in either batch: runs in each, and per measure the means in A and B and B / A.

        >>> compare_runs([{"state": "done", "cpu_s": 2.0}], [{"state": "done", "cpu_s": 3.0}], ["cpu_s"])
        [{'group': 'all runs', 'runs_a': 1, 'runs_b': 1, 'cpu_s': {'a': 2.0, 'b': 3.0, 'ratio': 1.5}}]
    """
    groups: dict[str, tuple[list, list]] = {}
    for side, found in ((0, runs_a), (1, runs_b)):
        for run in found:
            groups.setdefault(group_key(run, by), ([], []))[side].append(run)
    rows = []
    for key, (a, b) in groups.items():
        row: dict[str, Any] = {"group": key, "runs_a": len(a), "runs_b": len(b)}
        for measure in measures:
            mean_a, mean_b = mean_of(a, measure), mean_of(b, measure)
            row[measure] = {"a": mean_a, "b": mean_b,
                            "ratio": mean_b / mean_a if mean_a and mean_b is not None else None}
        rows.append(row)
    return rows


def check_measures(measures: Iterable[str] | None) -> list[str]:
    """The measures to compare (default DEFAULT_MEASURES); ConfigError('measure') naming the known ones."""
    known = MEASURES + stacking_flow.MEASURES  # a stacking batch's runs: the driver's measures
    chosen = list(measures or DEFAULT_MEASURES)
    for measure in chosen:
        if measure not in known:
            raise ConfigError("measure", f"must be one of the result's measures ({', '.join(known)}), got {measure!r}")
    return chosen


def compare(a: int, b: int, measures: Iterable[str] | None = None, *, by: list[str] | None = None,
            where: Mapping[str, Any] | None = None, prices: Iterable[str] | None = None,
            db_or_dir: str | os.PathLike | None = None) -> list[dict]:
    """Batches `a` and `b` side by side: per group (the configuration's label, or the keys `by`) the runs in each
    and each measure's mean over finished runs in A and B and B / A.

        >>> compare(3, 4, ["samples_per_s"])[0]["samples_per_s"]["ratio"]   # doctest: +SKIP
        1.42
    """
    chosen = check_measures(measures)
    with open_results(db_or_dir) as db:
        known = {row["batch_id"] for row in results_store.batches(db)}
        for name, batch in (("a", a), ("b", b)):
            if batch not in known:
                raise ConfigError(name, f"no batch {batch} in the database (`faasgd results list`, Python: "
                                        f"batches(), shows them)")
        text = {k: results_store.text(v) for k, v in (where or {}).items()}
        runs_a, runs_b = (priced(results_store.runs(db, [batch], text), prices) for batch in (a, b))
    return compare_runs(runs_a, runs_b, chosen, by)
