"""`faasgd status sJOB`: a stacking job's state, phase and (when it ended) scores and phase times.

Decision: a job id of the form the stacking driver makes ("s" + 15 hex digits; emnist-setup's are "j" + 15)
is a stacking job, so one `faasgd status` serves both function sets without a flag. Through the gateway the
status is stacking-driver's GET ?job_id=; with --direct it is read from the store (faasgd.stacking.records).
"""

from __future__ import annotations

import os
import re

from rich.console import Console
from rich.table import Table

from faasgd.cli.connect import gateway
from faasgd.cli.terminal_text import cell, visible
from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.openfaas import json_answer
from faasgd.stacking import records
from faasgd.store import open_store

DRIVER = "stacking-driver"
_STACKING_ID = re.compile(r"^s[0-9a-f]{15}$")


def is_stacking_job(job_id: str) -> bool:
    return bool(_STACKING_ID.match(job_id))


def reader(args):
    """A function returning the job's status once (from the store with --direct, else from the driver)."""
    if args.direct:
        store_url = args.store_url or read_setting(os.environ, "store_url")
        return lambda: records.read_status(open_store(store_url), args.job_id)
    if args.store_url:
        raise ConfigError("store_url", "only with --direct; through a gateway name the function's store with --store")
    client, query = gateway(args), {"job_id": args.job_id}
    if args.store:
        query["store"] = args.store
    return lambda: json_answer(client.invoke(DRIVER, method="GET", query=query), DRIVER)


def print_status(status: dict, out: Console) -> None:
    head = f"stacking job {status.get('job_id')}: {status.get('state')}"
    if status.get("state") == "running":
        head += f" (phase {status.get('phase', '-')})"
    out.print(visible(head + (f" - {status['error']}" if status.get("error") else "")), highlight=False, markup=False)
    config = status.get("config") or {}
    names = [m.get("model", "?") if isinstance(m, dict) else str(m) for m in config.get("models", [])]
    if status.get("base_scores"):
        table = Table("trainer", "model", "held-out accuracy", box=None, pad_edge=False)
        for i, score in enumerate(status["base_scores"]):
            table.add_row(*map(cell, (i, names[i % len(names)] if names else "-", f"{score:.4f}")))
        out.print(table)
        out.print(f"ensemble         {status['ensemble_score']:.4f}   (best base {max(status['base_scores']):.4f})",
                  highlight=False, markup=False)
    if status.get("phases"):
        phases = "   ".join(f"{name.removesuffix('_s')} {seconds:.3f} s" for name, seconds in status["phases"].items())
        out.print(visible(f"phases           {phases}   total {status.get('total_s', 0):.3f} s"), highlight=False,
                  markup=False)
    out.print(visible(f"trainers         {config.get('trainers_num')}, "
                      f"{'at once' if config.get('concurrent_training') else 'one after another'}, transfer "
                      f"{config.get('transfer')}"), highlight=False, markup=False)
