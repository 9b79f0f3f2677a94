"""`faasgd sweep FILE`: an Optuna study over a training job's settings (faasgd.tracking.sweep; the extra `track`).

The file (faasgd.tracking.sweep_file) is checked whole before anything starts. Through the gateway `--gateway`
(else $OPENFAAS_URL), or the local runtime of `--dir`: started if it is not running and stopped at the end if this
command started it, as `faasgd train` does. Each trial says one line; at the end the best trial, or that none met
its target (exit 1). The study stays in the file's storage: run the command again to add trials to it.
"""

from __future__ import annotations

import os
import sys

from faasgd.checks import whole_number
from faasgd.cli.output import emit_json
from faasgd.errors import ConfigError


def add_parser(sub, add_runtime_flags) -> None:
    sweep = sub.add_parser("sweep", help="an Optuna study over a job's settings (learning rate, workers, n_push, "
                                         "store, ...): each trial a training job (docs/how-to/sweep.md)")
    sweep.add_argument("file", metavar="FILE", help="the sweep file (YAML): space, objective, trials, storage")
    sweep.add_argument("--trials", type=int, default=None, help="run this many trials (default: the file's `trials`)")
    sweep.add_argument("--stack", default="stack.yml",
                       help="the stack file if this command starts the runtime (default stack.yml)")
    sweep.add_argument("--port", type=int, default=0,
                       help="the gateway's port if this command starts the runtime (default: a free one)")
    sweep.add_argument("--json", action="store_true",
                       help="print the best trial as one JSON document on stdout; the trials' lines on stderr")
    add_runtime_flags(sweep)


def run(args) -> int:
    from faasgd.tracking.sweep_file import read_sweep

    plan = read_sweep(args.file)
    trials = None if args.trials is None else whole_number(args.trials, "--trials", low=1, high=10_000)
    try:
        from faasgd.tracking import sweep
    except ImportError as error:  # the extra missing
        raise ConfigError("sweep", f"needs the extra track (pip install 'faasgd[track]'): {error}") from None
    out = sys.stderr if args.json else sys.stdout

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    gateway = args.gateway or os.environ.get("OPENFAAS_URL")
    say(f"study {plan.study!r} in {plan.storage}: {trials or plan.trials} trial(s), minimising {plan.figure}")
    if gateway:
        study = sweep.run(plan, sweep.through_gateway(gateway, args.dir), say, trials)
    else:
        from faasgd import api

        with api.runtime(args.stack, args.port, args.dir):
            study = sweep.run(plan, sweep.through_gateway(None, args.dir), say, trials)
    found = sweep.best(study)
    if args.json:
        emit_json(found)
    if found is None:
        say(f"no trial of study {plan.study!r} met its target")
        return 1
    say(f"best: trial {found['trial']}, {plan.figure} {found['value']:.6g} (job {found['job_id']}): "
        + sweep.settings(found["params"]))
    return 0
