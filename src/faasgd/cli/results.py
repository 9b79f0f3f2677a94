"""`faasgd results`: the runs of every test.sh batch, from the results database (faasgd.api.results_store).

    faasgd results [--db PATH] list                                   the batches: id, name, runs, when
    faasgd results [--db PATH] runs [--batch ID ...] [--where KEY=VALUE ...] [--price KEY=USD ...] [--json]
    faasgd results [--db PATH] compare A B [--by KEYS] [--measure M ...] [--price KEY=USD ...] [--plot FILE] [--json]

`compare` puts two batches side by side: their runs grouped by the configuration's label (the matrix keys it
varies; `--by number_of_workers,n_push` groups by those keys instead), each measure's mean over the group's
finished runs in A and in B, and B / A; `--plot` draws the first measure as paired bars per group.
Costs are as each batch priced them (its matrix's `prices:`); `--price gb_s=0.0000133334` (also `request`,
`store_hour`; the rest default) prices every run's recorded usage and wall time again (faasgd.cost).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rich.table import Table

from faasgd import api, cost
from faasgd.api import results_store
from faasgd.api.runs import DEFAULT_MEASURES, database_path
from faasgd.api.runs import compare_runs as compare  # noqa: F401  the comparison's rows (faasgd.api.runs)
from faasgd.cli.progress import console
from faasgd.cli.terminal_text import cell, plot_label
from faasgd.errors import ConfigError

RUN_COLUMNS = ("time_to_target_s", "samples_per_s", "final_test_accuracy", "cpu_s", "tx_bytes", "billed_gb_s",
               "requests", "cold_starts", "cost_usd")  # `runs`' table, after the run's identity and state
PRICE_HELP = f"price the runs' costs at this instead of their batch's: {', '.join(cost.PRICE_KEYS)} (repeatable)"


def add_parser(sub) -> None:
    results = sub.add_parser("results", help="list, filter and compare the runs of test.sh batches")
    results.add_argument("--db", default=None, help=f"default ${results_store.ENV}, else {results_store.DEFAULT_PATH}")
    verbs = results.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="the batches in the database")
    runs = verbs.add_parser("runs", help="the runs, filtered")
    runs.add_argument("--batch", type=int, action="append", default=None, help="only this batch (repeatable)")
    runs.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                      help="only runs whose config key or measure has this value (repeatable)")
    runs.add_argument("--price", action="append", default=None, metavar="KEY=USD", help=PRICE_HELP)
    runs.add_argument("--json", action="store_true", help="print the runs as one JSON document")
    comparing = verbs.add_parser("compare", help="two batches side by side: a table, and a plot with --plot")
    comparing.add_argument("a", type=int, help="the first batch's id")
    comparing.add_argument("b", type=int, help="the second batch's id")
    comparing.add_argument("--by", default=None, help="group by these comma-separated keys (default: the label)")
    comparing.add_argument("--measure", action="append", default=None, help=f"default {', '.join(DEFAULT_MEASURES)}")
    comparing.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                           help="only runs whose config key or measure has this value (repeatable)")
    comparing.add_argument("--price", action="append", default=None, metavar="KEY=USD", help=PRICE_HELP)
    comparing.add_argument("--plot", default=None, help="write the first measure's comparison as a PNG here")
    comparing.add_argument("--json", action="store_true", help="print the comparison as one JSON document")


def parse_where(items: list[str]) -> dict[str, str]:
    where = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--where", f"must be KEY=VALUE, got {item!r}")
        where[key.strip()] = value.strip()
    return where


def open_results(args):
    """The results database `--db` names (default: results/faasgd.sqlite); ConfigError('--db') when absent."""
    try:
        return api.open_results(args.db)
    except ConfigError as error:
        raise flagged(error) from None


def flagged(error: ConfigError) -> ConfigError:
    """The API's error, naming the flag that set the keyword it names."""
    if error.field not in FLAGS:
        return error
    return ConfigError(FLAGS[error.field], str(error).removeprefix(f"{error.field}: "))


FLAGS = {"db": "--db", "measure": "--measure", "where": "--where"}  # the API's keyword: the flag that sets it


def run(args) -> int:
    try:
        return run_verb(args)
    except ConfigError as error:
        raise flagged(error) from None
    except sqlite3.Error as error:  # a file SQLite reads, but not as this faasgd wrote it
        raise ConfigError("--db", f"{database_path(args.db)} is not a results database this faasgd reads: "
                                  f"{error}") from None


def run_verb(args) -> int:
    if args.verb == "list":
        return show_batches(api.batches(args.db))
    if args.verb == "runs":
        return show_runs(api.results(args.db, batches=args.batch, where=parse_where(args.where), prices=args.price),
                         args.json)
    return show_comparison(args)


def show_batches(batches: list[dict]) -> int:
    table = Table("id", "name", "target", "runs", "done", "started", "finished", "folder", box=None, pad_edge=False)
    for b in batches:
        table.add_row(*map(cell, (b["batch_id"], b["name"], b["target"], b["runs"], b["done"] or 0, b["started_at"],
                                  b["finished_at"] or "running", b["folder"])))
    console().print(table)
    return 0


def show_runs(runs: list[dict], as_json: bool) -> int:
    if as_json:
        print(json.dumps(runs, sort_keys=True, default=str))
        return 0
    table = Table("batch", "run", "configuration", "round", "state", "time to target", "samples/s", "test acc",
                  "cpu s", "tx bytes", "GB-s", "requests", "cold", "cost USD", box=None, pad_edge=False)
    for r in runs:
        table.add_row(*map(cell, (r["batch_id"], r["run_index"], r["configuration"], r["round"], r["state"],
                                  *(fmt(r.get(k)) for k in RUN_COLUMNS))))
    console().print(table)
    return 0


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def show_comparison(args) -> int:
    measures = args.measure or list(DEFAULT_MEASURES)
    by = [k.strip() for k in args.by.split(",") if k.strip()] if args.by else None
    if args.plot:
        check_plot_path(args.plot)  # before the database is read
    rows = api.compare(args.a, args.b, measures, by=by, where=parse_where(args.where), prices=args.price,
                       db_or_dir=args.db)
    if args.plot:
        plot_comparison(rows, measures[0], args.a, args.b, args.plot)
    if args.json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    table = Table("group", "runs A/B", *(f"{m} A | B | B/A" for m in measures), box=None, pad_edge=False)
    for row in rows:
        table.add_row(cell(row["group"]), cell(f"{row['runs_a']}/{row['runs_b']}"), *(
            cell(f"{fmt(row[m]['a'])} | {fmt(row[m]['b'])} | {fmt(row[m]['ratio'])}") for m in measures))
    out = console()
    out.print(f"A = batch {args.a}, B = batch {args.b}", highlight=False, markup=False)
    out.print(table)
    return 0


def check_plot_path(path: str) -> None:
    """`--plot` names a PNG file in an existing folder; ConfigError('--plot') otherwise."""
    target = Path(path)
    if not path.strip() or target.is_dir() or not target.parent.is_dir():
        raise ConfigError("--plot", f"must be a file path in an existing folder, got {path!r}")


def plot_comparison(rows: list[dict], measure: str, a: int, b: int, path: str) -> None:
    """Paired bars: the measure's mean per group, batch A beside batch B (matplotlib, Agg, no display)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 1.2 * len(rows) + 2), 4.5), layout="constrained")
    ax = fig.subplots()
    positions = range(len(rows))
    for offset, side, label in ((-0.2, "a", f"batch {a}"), (0.2, "b", f"batch {b}")):
        ax.bar([p + offset for p in positions], [row[measure][side] or 0.0 for row in rows], width=0.4, label=label)
    ax.set_xticks(list(positions), [plot_label(row["group"]) for row in rows], rotation=30, ha="right",
                  fontsize="small")
    ax.set_ylabel(f"{measure} (mean of finished runs)")
    ax.legend()
    fig.savefig(path, dpi=110)
