"""Which settings of a configuration to predict lie outside the runs `faasgd predict` learnt from.

The predictor (cli/predictor.py) is a law fitted on the recorded runs; beyond them it extrapolates, and its
intervals trust the law. So each setting the law reads is checked against the recorded runs that finished
(those it learnt from):
    RANGED      numbers: outside when below the smallest or above the largest recorded value;
                `parameters` is the model's parameter count (from dataset and hidden_sizes), its graph feature
    CATEGORIES  names (one-hots): outside when no recorded run used that value;
    UNLEARNT    settings that change the figures but are not features: outside when no recorded run used that
                value, since the prediction is then for the recorded runs' values, whatever was asked.
A combination of in-range settings never recorded together is not flagged; its interval is the wider for it.
"""

from __future__ import annotations

from typing import Any

from faasgd import job
from faasgd.cli.predictor import CONFIG_KEYS, parameter_count, store_kind
from faasgd.config import config_from_record
from faasgd.errors import ConfigError

RANGED = ("number_of_workers", "batch_size", "n_fetch", "n_push", "parameters")
CATEGORIES = ("store", "update_rule", "communication", "invocation_mode")
UNLEARNT = ("dataset", "push_codec", "target_accuracy")


def settings(run: dict) -> dict[str, Any]:
    """The values the checks compare, of a run record (config keys at the top level) or a config's to_dict()."""
    config = config_from_record({k: run[k] for k in CONFIG_KEYS if k in run})
    values = {name: getattr(config, name) for name in RANGED + CATEGORIES + UNLEARNT if name in CONFIG_KEYS}
    values["parameters"] = parameter_count(job.network_sizes(config))
    values["store"] = store_kind(run)
    return values


def recorded(runs: list[dict]) -> dict[str, list]:
    """Every setting's values over the runs learnt from (finished ones), sorted; ConfigError when none finished."""
    done = [settings(r) for r in runs if r.get("state") in (None, "done")]
    if not done:
        raise ConfigError("--where", f"none of the {len(runs)} matching runs finished: nothing to learn from")
    return {name: sorted({s[name] for s in done}, key=str if name not in RANGED else None) for name in done[0]}


def outside(seen: dict[str, list], asked: dict[str, Any]) -> list[dict]:
    """One note per setting of `asked` outside the recorded runs `seen`: the feature's name, the value asked,
    what was recorded (a [min, max] range for numbers, the values for the rest) and a sentence saying so."""
    notes = []
    for name, value in asked.items():
        values = seen[name]
        if name in RANGED and not values[0] <= value <= values[-1]:
            why = f"outside the recorded runs' range {values[0]}-{values[-1]}: its figures are extrapolated"
            notes.append(note(name, value, [values[0], values[-1]], "range", why))
        elif name not in RANGED and value not in values:
            listed = ", ".join(map(str, values))
            why = ("the model has not learnt its effect" if name in CATEGORIES else
                   f"the model does not learn from {name}: its figures are for the recorded value(s)")
            notes.append(note(name, value, values, "values", f"not among the recorded runs' values ({listed}): {why}"))
    return notes


def note(name: str, value: Any, seen: list, kind: str, why: str) -> dict:
    return {"feature": name, "value": value, "recorded": seen, "kind": kind, "message": f"{name}={value} is {why}"}


def strict_error(notes: list[dict]) -> ConfigError:
    """What `--strict` refuses with: every setting outside the recorded runs, with what was recorded."""
    found = "; ".join(f"{n['feature']}={n['value']} (recorded: {describe(n)})" for n in notes)
    return ConfigError("--strict", f"{len(notes)} setting(s) outside the recorded runs, no prediction is trusted "
                                   f"there: {found}. Record runs there, or drop --strict to see the extrapolation")


def describe(n: dict) -> str:
    seen = n["recorded"]
    return f"{seen[0]}-{seen[1]}" if n["kind"] == "range" else ", ".join(map(str, seen))
