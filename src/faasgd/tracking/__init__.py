"""A job's figures in the tools researchers already use: an MLPerf-format log (`:::MLLOG` lines), Katib's metric
lines, TensorBoard event files, an MLflow run. Each tool's library is an extra (`track`), imported only by the sink that writes
for it: the core, the function image and the runtime never load them (the import rules in pyproject.toml).

    from faasgd import api, tracking
    job = api.train(dataset="synthetic", train_samples=2000, hidden_sizes=[32])
    tracking.follow(job, tracking.sinks(mllog="run.mllog", tensorboard="tb", metrics_lines=True))

    timeline.py      the job's evaluations as points (samples, accuracy, when, which worker) from its events
    feed.py          reads a running job's new events as its status is read; hands points and the end to sinks
    mllog.py         the MLPerf Training log format through mlperf-logging; mllog_rules.yaml checks it
    metric_lines.py  `name=value` lines on stdout as evaluations happen (Katib's StdOut collector)
    tensorboard.py   event files: the job's curves and one run per worker (tensorboardX)
    mlflow_run.py    one MLflow run per job: its configuration, curves, final figures and result record
"""

from faasgd.tracking.feed import Feed, Run, Sink, follow, sinks

__all__ = ["Feed", "Run", "Sink", "follow", "sinks"]
