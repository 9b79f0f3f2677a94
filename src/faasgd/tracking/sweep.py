"""`faasgd sweep FILE`: an Optuna study whose trials are training jobs started with faasgd.api.

    from faasgd import api
    from faasgd.tracking import sweep, sweep_file
    plan = sweep_file.parse_sweep(yaml.safe_load(open("sweep.yml")))
    with api.runtime(port=0, directory=".faasgd"):
        study = sweep.run(plan, sweep.through_gateway(directory=".faasgd"))
    study.best_trial.params

Each trial takes the file's fixed keys and a value of each key of its space (Optuna's TPE sampler), starts the job
through the gateway (emnist-train scaled to one replica per worker first, at most the Community Edition's 5, as
./test.sh does), waits for it and returns the figure the objective minimises:
    time_to_target   the result's time_to_target_s
    cost_at_target   the result's cost_usd (the job stops at its target: what reaching it cost)
A job that ended short of its target is a PRUNED trial (it says nothing of how fast the target is met, but TPE
counts it among the worse ones); a job that failed, or still ran at `timeout_s` (cancelled then), is a FAILED trial.
Either way the sweep goes on. Every trial keeps its job's id and figures as user attributes (`job_id`, `state`,
`reached_target`, `time_to_target_s`, `samples_to_target`, `final_test_accuracy`, `cost_usd`, `wall_s`), so the study
in its storage (a SQLite file) can be read by Optuna's tools (optuna-dashboard, `optuna.load_study`) and each trial
traced back to its job (`faasgd status JOB`).
"""

from __future__ import annotations

from typing import Any, Callable

import optuna

from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import DEFAULT_DIR
from faasgd.tracking.sweep_file import Sweep

KEPT = ("state", "reached_target", "time_to_target_s", "samples_to_target", "final_test_accuracy", "cost_usd", "wall_s")
MAX_REPLICAS = 5  # OpenFaaS Community Edition's cap on a function's replicas (faas-netes MaxReplicas)
READY_S = 120.0  # seconds for emnist-train's replicas to serve after a scale


class TrialFailed(FaasgdError):
    """Raised when a trial's job failed or did not end in time: Optuna records the trial FAILED."""


def through_gateway(gateway: str | None = None, directory: str = DEFAULT_DIR) -> Callable[[dict], Any]:
    """A trial's job starter: emnist-train scaled to the job's workers, then api.train (the gateway `gateway`, else
    $OPENFAAS_URL, else the local runtime of `directory`)."""
    from faasgd import api
    from faasgd.openfaas import TRAIN_FUNCTION

    def start(config: dict):
        client = api.connect(gateway, directory)
        replicas = max(1, min(int(config.get("number_of_workers") or 2), MAX_REPLICAS))
        client.scale(TRAIN_FUNCTION, replicas)
        client.wait_for_replicas(TRAIN_FUNCTION, replicas, READY_S)
        return api.train(config, gateway=gateway, directory=directory)

    return start


def settings(chosen: dict) -> str:
    """A trial's values as `key=value` words (floats to 4 significant figures)."""
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in chosen.items())


def objective(plan: Sweep, start: Callable[[dict], Any], say: Callable[[str], None]) -> Callable[[Any], float]:
    """Optuna's objective: one job per trial (`start(config)`: an api.Job), its figure."""

    def trial_value(trial) -> float:
        chosen = {dim.name: dim.suggest(trial) for dim in plan.space}
        shown = settings(chosen)
        try:
            result = run_job(trial, {**plan.fixed, **chosen})
        except TrialFailed as error:
            say(f"trial {trial.number}: {shown}: failed: {error}")
            raise
        if not result.get("reached_target") or result.get(plan.figure) is None:
            say(f"trial {trial.number}: {shown}: job {result.get('job_id')} ended short of its target (pruned)")
            raise optuna.TrialPruned(f"job {result.get('job_id')} ended short of its target")
        value = float(result[plan.figure])
        say(f"trial {trial.number}: {shown}: {plan.figure} {value:.6g} (job {result.get('job_id')})")
        return value

    def run_job(trial, config: dict) -> dict:
        """The job's result; TrialFailed when it failed, did not end in time, or could not start (bad input: raised)."""
        try:
            job = start(config)
            trial.set_user_attr("job_id", job.job_id)
            status = job.wait(plan.timeout_s)
            if status.get("state") == "running":
                job.cancel()
                raise TrialFailed(f"job {job.job_id} still running after timeout_s {plan.timeout_s:g}: cancelled")
        except ConfigError:
            raise  # the sweep's input: ends the sweep, naming the field
        except FaasgdError as error:
            raise TrialFailed(str(error) if isinstance(error, TrialFailed) else f"{type(error).__name__}: {error}") \
                from error
        result = status.get("result") or {}
        for name in KEPT:
            trial.set_user_attr(name, result.get(name))
        if result.get("state") != "done":
            raise TrialFailed(f"job {job.job_id} failed: {result.get('error')}")
        return result

    return trial_value


def run(plan: Sweep, start: Callable[[dict], Any], say: Callable[[str], None] = print,
        trials: int | None = None) -> optuna.Study:
    """The study after `trials` more trials (default: the file's): made in its storage, or loaded to go on."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # each trial is said once, by `say`
    study = optuna.create_study(storage=plan.storage, study_name=plan.study, direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=plan.seed), load_if_exists=True)
    study.set_user_attr("objective", plan.objective)
    study.optimize(objective(plan, start, say), n_trials=trials or plan.trials, catch=(TrialFailed,))
    return study


def best(study: optuna.Study) -> dict | None:
    """The best trial as a record (number, value, params, job_id), or None when no trial met its target."""
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return None
    trial = study.best_trial
    return {"trial": trial.number, "value": trial.value, "params": trial.params,
            "job_id": trial.user_attrs.get("job_id"), "objective": study.user_attrs.get("objective")}
