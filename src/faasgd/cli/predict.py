"""`faasgd predict`: a configuration's Driple figures and time to target, from the runs in the results database.

    faasgd predict [--db PATH] [--batch ID ...] [--where KEY=VALUE ...] [--set KEY=VALUE ...] [--level 0.9]
                   [--strict] [--json]
    faasgd predict --validate [...]                       leave-one-configuration-out MAPE per target, beside
                                                          the rounds' own spread (the noise floor), and the %
                                                          of held-out runs inside their interval
    faasgd predict --graph DATA [--set KEY=VALUE ...] [--level 0.9] [--json]
                                                          the 12 Driple figures from the graph inspector, a GCN
                                                          on the network's graph (cli/predict_graph.py)
    faasgd predict --transfer-to KEY=VALUE [--transfer-runs 5 ...] [...]
                                                          fitted on the runs not matching KEY=VALUE, adapted with
                                                          N runs that match it; MAPE on the others, per N
                                                          (the mean over DRAWS random choices of the N runs)

`--set` gives the configuration to predict (config keys; the rest are TrainConfig's defaults; `store` names
redis or memcached). `--batch` and `--where` choose the runs learnt from. Each figure comes with its prediction
interval at `--level` (one new run of the configuration lies inside it that often). A setting outside the
recorded runs (cli/predict_range.py) is named on stderr and in `--json`'s "out_of_range"; `--strict` then exits
2 after printing the prediction. With `--json` stdout holds exactly one JSON document. The model:
cli/predictor.py.
"""

from __future__ import annotations

import json
import sys

from rich.table import Table

from faasgd.api import results_store
from faasgd.cli import predict_range
from faasgd.cli.predictor import LEVEL, TARGETS, Predictor, round_spread, transfer_curve, validate
from faasgd.cli.progress import console
from faasgd.cli.results import fmt, open_results, parse_where
from faasgd.config import load_config
from faasgd.errors import ConfigError

DRAWS = 10  # random choices of the target runs a transfer figure is averaged over


def add_parser(sub) -> None:
    predict = sub.add_parser("predict", help="predict resource figures and time to target from the results database")
    predict.add_argument("--db", default=None, help=f"default ${results_store.ENV}, else {results_store.DEFAULT_PATH}")
    predict.add_argument("--batch", type=int, action="append", default=None, help="learn from this batch (repeatable)")
    predict.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="learn from these runs only")
    predict.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the configuration to predict")
    predict.add_argument("--validate", action="store_true", help="held-out error (MAPE) per target instead")
    predict.add_argument("--transfer-to", default=None, metavar="KEY=VALUE", help="the setting to transfer to")
    predict.add_argument("--transfer-runs", type=int, action="append", default=None,
                         help="target runs used to adapt (repeatable; default 0, 1, 3, 5, 10)")
    predict.add_argument("--level", type=float, default=LEVEL,
                         help=f"the prediction intervals' level, in (0, 1) (default {LEVEL})")
    predict.add_argument("--strict", action="store_true",
                         help="exit 2 when a setting lies outside the recorded runs (after printing the prediction)")
    predict.add_argument("--graph", default=None, metavar="DATA",
                         help="the 12 Driple figures from the graph inspector (a GCN) learnt on this data set "
                              "(bench/inspector_data.py's JSON lines): networks never profiled too")
    predict.add_argument("--json", action="store_true", help="stdout: one JSON document")


def learning_runs(args) -> list[dict]:
    with open_results(args) as db:
        runs = results_store.runs(db, args.batch, parse_where(args.where))
    if not runs:
        raise ConfigError("--where", "no runs in the results database match; nothing to learn from")
    return runs


def run(args) -> int:
    check_flags(args)
    if args.graph is not None:
        from faasgd.cli import predict_graph

        return predict_graph.predict(args)
    runs = learning_runs(args)
    if args.transfer_to:
        return show(transfer(runs, args), args.json, "runs used", "MAPE % on the target setting's other runs")
    if args.validate:
        found, spread = validate(runs, args.level), round_spread(runs)
        return show({t: {"MAPE %": v["mape"], "held-out runs": v["predictions"], "rounds' spread %": spread[t],
                         "inside interval %": v["inside"]} for t, v in found.items()},
                    args.json, None, f"leave one configuration out, {len(runs)} runs; inside: held-out runs inside "
                                     f"their {args.level:.0%} prediction interval")
    return predict(runs, args)


def check_flags(args) -> None:
    if not 0.0 < args.level < 1.0:
        raise ConfigError("--level", f"must be in (0, 1), like 0.9 for a 90% interval, got {args.level}")
    if args.strict and (args.validate or args.transfer_to):
        raise ConfigError("--strict", "checks the settings of a prediction: it has no meaning with --validate or "
                                      "--transfer-to")
    if args.graph is not None:
        given = [flag for flag, on in (("--validate", args.validate), ("--transfer-to", args.transfer_to),
                                       ("--strict", args.strict), ("--where", args.where), ("--batch", args.batch),
                                       ("--db", args.db)) if on]
        if given:
            raise ConfigError("--graph", f"learns from its data set alone, for one configuration: not with "
                                         f"{', '.join(given)}")
    for item in args.set:
        key, sep, _ = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", f"must be KEY=VALUE, got {item!r}")


def predict(runs: list[dict], args) -> int:
    """The figures, their intervals and the settings outside the recorded runs: printed (notes on stderr), then
    with --strict a ConfigError when there are any."""
    config = load_config({}, parse_where(args.set)).to_dict()  # every key checked, as a request's
    notes = predict_range.outside(predict_range.recorded(runs), predict_range.settings(config))
    model = Predictor.fit(runs)
    predicted, bounds = model.predict(config), model.interval(config, args.level)
    figures = {t: {"predicted": predicted[t], "low": bounds[t] and bounds[t][0], "high": bounds[t] and bounds[t][1],
                   "runs": model.runs_used.get(t, 0)} for t in TARGETS}
    for n in notes:
        print(f"faasgd: note: {n['message']}", file=sys.stderr)
    if args.json:
        print(json.dumps({"figures": figures, "level": args.level, "runs": len(runs), "out_of_range": notes,
                          "settings": predict_range.settings(config)}, sort_keys=True))
    else:
        show(figures, False, None, f"low-high: {args.level:.0%} prediction interval; {len(runs)} runs")
    if args.strict and notes:
        raise predict_range.strict_error(notes)
    return 0


def transfer(runs: list[dict], args) -> dict:
    (key, value), = parse_where([args.transfer_to]).items()
    target = [r for r in runs if results_store.text(r.get(key)) == value]
    source = [r for r in runs if results_store.text(r.get(key)) != value]
    if not source or not target:
        raise ConfigError("--transfer-to", f"needs runs with {key}={value} and runs without ({len(target)} and "
                                           f"{len(source)} found)")
    counts = sorted(set(args.transfer_runs or [0, 1, 3, 5, 10]))
    if any(n < 0 or n >= len(target) for n in counts):
        raise ConfigError("--transfer-runs", f"each must be in [0, {len(target) - 1}] (the target setting has "
                                             f"{len(target)} runs), got {counts}")
    curve = transfer_curve(source, target, counts, draws=DRAWS)
    return {t: {str(n): curve[n][t] for n in counts} for t in TARGETS}


def show(rows: dict[str, dict], as_json: bool, column_title: str | None, caption: str) -> int:
    if as_json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    columns = list(next(iter(rows.values())))
    table = Table("figure", *[f"{column_title} {c}" if column_title else c for c in columns], box=None,
                  pad_edge=False, caption=caption)
    for target, values in rows.items():
        table.add_row(target, *(fmt(values[c]) for c in columns))
    console().print(table)
    return 0
