"""`--mllog FILE`: a job as an MLPerf Training-format log (`:::MLLOG {...}` lines), written through mlperf-logging.

faasgd's benchmark is not one of MLPerf's and a log of it is no MLPerf result: the format is borrowed because its
score is exactly our time to target (run_start to run_stop) and its tools read it. mllog_rules.yaml beside this
file is our own rules file for mlperf-logging's compliance checker (docs/how-to/tracking.md).

On the job's clock (every `time_ms` is a stamp of the job's timeline, job/result.py):
    init_start    the job's creation (set-up: records, the fan-out)   + the submission fields and hyperparameters
    init_stop     the first worker call's entry, and run_start there: where time_to_target_s starts
    block_start / block_stop, eval_start / eval_accuracy / eval_stop   per evaluation up to the crossing, each
                  with samples_count (the samples trained into the parameters evaluated) and epoch_num
    run_stop      at the crossing, status success; else at the result, status aborted
"""

from __future__ import annotations

import logging
import os
import re

from mlperf_logging.mllog import constants as keys
from mlperf_logging.mllog.mllog import MLLogger

from faasgd.data.shard import AUTO_VALIDATION_MAX, validation_rows
from faasgd.tracking.feed import Run
from faasgd.tracking.timeline import Point

RULES = os.path.join(os.path.dirname(__file__), "mllog_rules.yaml")  # the compliance checker's rules (--config)
# a line's `file` metadata is the writing module's path from here (faasgd/tracking/mllog.py), not this machine's
SOURCE_ROOT = re.escape(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # a pattern
ORG = "faasgd"
DIVISION = "open"  # the format's field; this is no submission (see the module's docstring)
STATUS = "research"
RULESET = "6.1.0"  # the checker's log parser of this version reads the lines


def benchmark(config: dict) -> str:
    """submission_benchmark: faasgd's own, never an MLPerf benchmark's name."""
    return f"faasgd-{config.get('dataset', 'unknown')}"


def platform(config: dict) -> str:
    return (f"faasgd {config.get('algorithm', 'downpour')}, {config.get('number_of_workers')} worker(s), "
            f"{config.get('invocation_mode')} mode, store {config.get('store') or 'direct'}")


def global_batch(config: dict) -> int:
    return int(config.get("global_batch_size") or int(config.get("batch_size") or 0)
               * int(config.get("number_of_workers") or 1))


def eval_rows(config: dict, rows: int) -> int:
    """The validation rows the stop rule evaluates, held out of the training rows (data/shard.py): from the config
    where it tells; else from the `rows` left to train on, a tenth of the whole (rows // 9, at most 5000)."""
    if config.get("validation_samples"):
        return int(config["validation_samples"])
    if config.get("train_samples"):
        return validation_rows(int(config["train_samples"]), 0)
    return min(AUTO_VALIDATION_MAX, max(1, rows // 9))


def ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def write(run: Run, path: str) -> None:
    """The run's log at `path` (replaced)."""
    logger = logging.Logger(f"faasgd.mllog.{path}")  # not the package's shared logger: one file per job
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    logger.addHandler(handler)
    try:
        log_run(MLLogger(logger=logger, default_stack_offset=1, root_dir=SOURCE_ROOT), run)
    finally:
        handler.close()


def log_run(log: MLLogger, run: Run) -> None:
    config, created = run.config, run.created_at or run.result.get("finished_at")
    started = run.run_start if run.run_start is not None else created
    crossing = run.crossing if run.result.get("reached_target") else None
    end = crossing["at"] if crossing else run.result.get("finished_at") or started
    meta = {"job_id": run.job_id}
    at = ms(created)
    log.start(keys.INIT_START, time_ms=at, metadata=meta)
    for key, value in ((keys.SUBMISSION_BENCHMARK, benchmark(config)), (keys.SUBMISSION_ORG, ORG),
                       (keys.SUBMISSION_DIVISION, DIVISION), (keys.SUBMISSION_STATUS, STATUS),
                       (keys.SUBMISSION_PLATFORM, platform(config)),
                       (keys.GLOBAL_BATCH_SIZE, global_batch(config)),
                       (keys.OPT_BASE_LR, float(config.get("learning_rate") or 0.0)),
                       (keys.TRAIN_SAMPLES, run.train_rows), (keys.EVAL_SAMPLES, eval_rows(config, run.train_rows)),
                       (keys.SEED, config.get("seed"))):
        log.event(key, value, time_ms=at)
    log.end(keys.INIT_STOP, time_ms=ms(started), metadata=meta)
    log.start(keys.RUN_START, time_ms=ms(started), metadata=meta)
    before, before_at = 0, started
    for point in (p for p in run.points if p.at <= end):
        log_evaluation(log, point, before, before_at, run.train_rows)
        before, before_at = point.samples, max(started, point.at)
    status = keys.SUCCESS if crossing else keys.ABORTED
    log.end(keys.RUN_STOP, time_ms=ms(end), metadata={**meta, keys.STATUS: status,
                                                     keys.SAMPLES_COUNT: int(crossing["samples"]) if crossing
                                                     else int(run.result.get("samples") or 0)})


def log_evaluation(log: MLLogger, point: Point, before: int, before_at: float, rows: int) -> None:
    """The block of training since the last evaluation, then this evaluation."""
    at = ms(max(before_at, point.at))
    epoch = point.samples / rows if rows else 0.0
    log.start(keys.BLOCK_START, time_ms=ms(before_at), metadata={keys.SAMPLES_COUNT: before})
    log.end(keys.BLOCK_STOP, time_ms=at, metadata={keys.SAMPLES_COUNT: point.samples})
    counted = {keys.SAMPLES_COUNT: point.samples, keys.EPOCH_NUM: round(epoch, 4)}
    log.start(keys.EVAL_START, time_ms=at, metadata=counted)
    log.event(keys.EVAL_ACCURACY, point.accuracy, time_ms=at,
              metadata={**counted, "worker_id": point.worker_id, "test_accuracy": point.test_accuracy})
    log.end(keys.EVAL_STOP, time_ms=at, metadata=counted)


class MLLog:
    """The sink: writes the log when the job ends."""

    def __init__(self, path: str):
        self.path = path

    def point(self, point: Point) -> None:
        pass  # the log is written whole from the run, on the job's clock

    def finish(self, run: Run) -> None:
        write(run, self.path)


def check(path: str, rules: str = RULES) -> bool:
    """Whether the log at `path` passes mlperf-logging's compliance checker with `rules` (its messages are logged)."""
    from mlperf_logging.compliance_checker import mlp_compliance

    return mlp_compliance.make_checker("training", RULESET, False, True).check_file(path, rules)
