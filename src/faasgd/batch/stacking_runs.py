"""One run of a stacking matrix: the configuration POSTed to stacking-driver, whose answer is the result.

The driver is synchronous (it calls the trainers, the reducer and the metatrainer itself and answers with
base_scores, ensemble_score and the time of each phase), so a run is one call, waited on up to the run's
timeout; nothing is polled. Round r uses seed = the configuration's seed (default 42) + r - 1, as for
emnist. The stacking functions run at their stack.yml scale: nothing is scaled per run (emnist-train's
replicas are the emnist runs' concern). A failed call is a record with state "failed" and the error.
"""

from __future__ import annotations

from typing import Callable

from faasgd.batch.matrix import Configuration
from faasgd.batch.targets import Target
from faasgd.openfaas import json_answer
from faasgd.stacking.config import load_stacking
from faasgd.stacking.flow import MEASURES, PHASES

DRIVER = "stacking-driver"


def run_stacking(configuration: Configuration, round_number: int, target: Target, run_timeout_s: float,
                 progress: Callable[[str], None]) -> dict:
    """The run's record: identity, the job's config, and the driver's measures flat (MEASURES)."""
    body = configuration.overrides()
    body["seed"] = load_stacking(None, body).seed + round_number - 1
    config = load_stacking(None, body)
    record = {"workload": "stacking", "config_id": configuration.config_id, "configuration": configuration.label,
              "varying": configuration.varying, "round": round_number, "config": config.to_dict(),
              "store": configuration.store, "job_id": None}
    try:
        answer = json_answer(target.gateway.invoke(DRIVER, body, timeout_s=run_timeout_s), DRIVER)
    except Exception as error:  # recorded; the batch goes on
        return {**record, "state": "failed", "error": f"{type(error).__name__}: {error}"}
    return {**record, **measures(answer)}


def measures(answer: dict) -> dict:
    """The driver's answer as a run record's fields: state, error, job_id and MEASURES (phases flattened)."""
    flat = {**answer, **(answer.get("phases") or {})}
    out = {"state": answer.get("state") or "failed", "error": answer.get("error"), "job_id": answer.get("job_id")}
    out.update({key: flat.get(key) for key in MEASURES})
    if out["state"] == "done" and any(out[key] is None for key in ("ensemble_score", "total_s", *PHASES)):
        out.update(state="failed", error=f"{DRIVER} answered without {', '.join(k for k in MEASURES if out[k] is None)}")
    return out


def outcome(record: dict) -> str:
    """The progress line's end for a stacking run."""
    if record.get("state") != "done":
        return f"FAILED: {record.get('error')}"
    return (f"done, ensemble_score {record['ensemble_score']:.4f} (best base {record.get('best_base_score') or 0:.4f}),"
            f" total {record['total_s']:.2f} s")
