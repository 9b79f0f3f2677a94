"""runs.csv's columns: each one's unit and the clock (or the source) it is measured on, in one place.

`COLUMNS` documents every column of an emnist batch's runs.csv (report.CSV_COLUMNS) but the config keys,
which are the job's config (faasgd.config.TrainConfig, docs/reference/configuration.md) and are listed as one group.
`problems(header)` names what a header has that the schema does not (a duplicated or undocumented column) and
what it lacks; tests/unit/batch/test_results_schema.py writes a runs.csv through the real writer and checks it.
docs/reference/runs-csv.md is `render_markdown()`, printed by `python -m faasgd.batch.schema`.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from faasgd.config import FIELDS

# The clocks a duration is measured on (Column.clock); "" for a figure that is not a duration.
CLOCKS = {
    "job": "the job's timeline (column `clock`): Redis TIME on Redis (1 µs), the hosts' time.time on the other "
           "stores (1 µs; Memcached's own clock has whole seconds), read once a call and moved on by time.monotonic",
    "call": "time.monotonic within each call, summed over calls",
    "perf": "time.perf_counter around each piece of work within each call, summed over calls and workers",
    "sampler": "the worker's resource sampler (profile/), every 1/profile_hz s within each call",
    "cpu": "each worker call's CPU clock from its entry to its last record, summed over calls and workers: the "
           "process's (CLOCK_PROCESS_CPUTIME_ID) while the call had its process to itself, else the call's own "
           "threads' (column `cpu_clock`)",
    "server": "the store servers' own count of their CPU (Redis INFO cpu, memcached stats rusage; summed over a "
              "pool's or a cluster's servers), read as the job was created and as its result was written",
}


@dataclass(frozen=True)
class Column:
    name: str
    unit: str  # "" for a label or an identifier
    clock: str  # a key of CLOCKS, or "" (not a duration, or not measured on a clock)
    meaning: str


def _sampler(series: str, unit: str) -> tuple[Column, ...]:
    return (Column(f"{series}_burst_s", "s", "sampler", f"mean duration of the {series} series' bursts"),
            Column(f"{series}_idle_s", "s", "sampler", f"mean duration of the {series} series' idle periods"),
            Column(f"{series}_burst_use", unit, "sampler", f"mean {series} value during bursts"))


IDENTITY = (
    Column("config_id", "", "", "the configuration's index in the matrix, from 0"),
    Column("configuration", "", "", "the configuration's label: the matrix keys it varies"),
    Column("round", "", "", "the round, from 1 (seed = the configuration's seed + round - 1)"),
)
CONFIG = "the job's config key, as its function resolved it (docs/reference/configuration.md; store: empty or default is " \
         "the function's own store_url)"
OUTCOME = (
    Column("job_id", "", "", "the job's id in its store"),
    Column("state", "", "", "done or failed"),
    Column("error", "", "", "why the run failed (empty when done)"),
    Column("clock", "", "", "the clock of the job's timeline: redis TIME (1 µs) or host time.time (1 µs)"),
    Column("cpu_clock", "", "", "the clocks the workers' CPU-seconds were counted on: process, threads, or mixed"),
)
MEASURED = (
    Column("time_to_target_s", "s", "job", "the first call's entry to the crossing of target_accuracy (empty: not "
           "reached)"),
    Column("reached_target", "bool", "", "whether validation accuracy met the target"),
    Column("epochs_to_target", "epochs", "", "passes over the training rows at the crossing"),
    Column("samples_to_target", "samples", "", "samples trained at the crossing"),
    Column("final_validation_accuracy", "fraction", "", "validation accuracy of the job's model"),
    Column("final_test_accuracy", "fraction", "", "test accuracy of the job's model"),
    Column("majority_class_rate", "fraction", "",
           "what always guessing the test rows' most common class scores (its share of them)"),
    Column("guesses_one_class", "", "",
           "true when final_test_accuracy is within 0.005 of what always guessing one class scores: the model learned "
           "nothing it shows (a learning_rate too small or too large?)"),
    Column("epochs", "epochs", "", "samples / training rows, every worker"),
    Column("samples", "samples", "", "samples trained, every worker"),
    Column("wall_s", "s", "job", "the span of the workers' calls: the first call's entry to the last call's last "
           "record"),
    Column("samples_per_s", "samples/s", "job", "samples / wall_s"),
    Column("pushes", "count", "", "pushes the store applied"),
    Column("fetches", "count", "", "fetches of the global parameters"),
    Column("conflicts", "count", "", "races the workers' own pushes lost"),
    Column("retries", "count", "", "store calls retried after an outage"),
    Column("staleness_p50", "steps", "", "median push staleness: other workers' steps applied meanwhile"),
    Column("staleness_p99", "steps", "", "99th percentile of push staleness"),
    Column("max_concurrent_workers", "workers", "job", "most workers training at the same time"),
    Column("push_bytes", "bytes", "", "bytes of the updates pushed, as encoded (push_codec)"),
    Column("fetch_bytes", "bytes", "", "bytes of the parameters fetched"),
    Column("push_bytes_per_worker", "bytes", "", "push_bytes / workers"),
    Column("fetch_bytes_per_worker", "bytes", "", "fetch_bytes / workers"),
    Column("residual_resets", "count", "", "calls whose error feedback restarted from zeros"),
    Column("rounds", "rounds", "", "synchronous rounds run (0 for downpour)"),
    Column("round_bytes_written", "bytes", "", "rounds' object bytes written, every worker"),
    Column("round_bytes_read", "bytes", "", "rounds' object bytes read, every worker"),
    Column("round_bytes_per_worker", "bytes", "", "(written + read) / workers"),
    Column("barrier_wait_s", "s", "call", "seconds waited at the rounds' barriers, every worker"),
    Column("slowed_s", "s", "perf", "seconds slowed workers slept on purpose (slow_factor, --chaos slow), every worker"),
    Column("bound_waits", "count", "", "waits of workers too far ahead of the slowest (max_staleness)"),
    Column("bound_wait_s", "s", "call", "seconds those waits took, every worker"),
    Column("late_rounds", "rounds", "", "rounds merged without a worker's contribution (backup_workers), every worker"),
    Column("merged_contributions", "count", "", "contributions the rounds merged (backup_workers)"),
    Column("compute_s", "s", "perf", "downpour gradient steps (loss, gradients, update), every worker"),
    Column("batches_s", "s", "perf", "gathering and scaling minibatches, every worker"),
    Column("eval_s", "s", "perf", "evaluating parameters (stop-rule checks, epoch ends), every worker"),
    Column("load_s", "s", "perf", "loading the shard and the evaluation rows, every worker"),
    Column("comm_wait_s", "s", "perf", "waiting on fetches and pushes, every worker"),
    Column("worker_s", "s", "job", "every worker's calls' time: entry to last record, summed"),
    Column("compute_share", "fraction", "", "compute_s / worker_s"),
    Column("cpu_s", "CPU s", "cpu", "the workers' CPU-seconds, counted: each call from its entry to its last record"),
    Column("store_cpu_s", "CPU s", "server", "the store servers' CPU-seconds over the job: all of theirs, another "
           "job's on the same servers included (empty: a server did not say)"),
    Column("cpu_s_per_sample", "CPU s/sample", "cpu", "(cpu_s + store_cpu_s where known) / samples"),
    *_sampler("cpu", "cores"), *_sampler("rss", "MB"), *_sampler("tx", "bytes/s"), *_sampler("rx", "bytes/s"),
    Column("tx_bytes", "bytes", "sampler", "bytes the workers sent to the stores, on the wire"),
    Column("rx_bytes", "bytes", "sampler", "bytes the workers received from the stores, on the wire"),
    Column("cpu_peak", "cores", "sampler", "highest CPU sample of one worker"),
    Column("rss_peak_mb", "MB", "sampler", "highest resident memory of one process"),
    Column("tx_peak_bps", "bytes/s", "sampler", "highest send rate of one worker"),
    Column("rx_peak_bps", "bytes/s", "sampler", "highest receive rate of one worker"),
    Column("requests", "calls", "", "function calls billed: the workers' calls, duplicates and emnist-setup's"),
    Column("billed_s", "s", "call", "every call's duration, handler entry to end"),
    Column("billed_gb_s", "GB-s", "call", "each call's duration x its memory limit in GB (1024 MB), summed"),
    Column("memory_mb", "MB", "", "the functions' memory limit the calls were billed at (memory_limit)"),
    Column("cold_starts", "calls", "", "calls that were the first a replica process served"),
    Column("duplicate_calls", "calls", "", "calls that trained nothing (a duplicate delivery)"),
    Column("cost_faas_usd", "USD", "call", "billed_gb_s x gb_s + requests x request (the batch's prices)"),
    Column("cost_store_usd", "USD", "job", "store_hour x wall_s / 3600 (the batch's prices)"),
    Column("cost_usd", "USD", "", "cost_faas_usd + cost_store_usd"),
    Column("placement", "", "", "the replica that ran each worker, by worker id, ';'-joined"),
    Column("link_bytes", "bytes", "", "with emulated nodes (faasgd up --nodes): what each node's link carried "
                                      "during the run, JSON {node: {to_node, from_node}}; else empty"),
)
COLUMNS: tuple[Column, ...] = IDENTITY + tuple(Column(key, "", "", CONFIG) for key in FIELDS) + OUTCOME + MEASURED
BY_NAME = {column.name: column for column in COLUMNS}


def problems(header: tuple[str, ...] | list[str]) -> list[str]:
    """What is wrong with a runs.csv header against the schema: duplicated, undocumented, missing columns."""
    counts = Counter(header)
    out = [f"column {name!r} appears {n} times" for name, n in counts.items() if n > 1]
    out += [f"column {name!r} is not in the schema (faasgd.batch.schema)" for name in counts if name not in BY_NAME]
    out += [f"column {name!r} is in the schema but not in the header" for name in BY_NAME if name not in counts]
    return out


def render_markdown() -> str:
    """The columns as a Markdown table (the config keys as one row), then the clocks."""
    lines = ["| column | unit | clock | meaning |", "|---|---|---|---|"]
    config_done = False
    for column in COLUMNS:
        if column.meaning == CONFIG:
            if not config_done:
                lines.append(f"| every config key ({len(FIELDS)}: `{next(iter(FIELDS))}` ... `{list(FIELDS)[-1]}`)"
                             f" | - | - | {CONFIG} |")
                config_done = True
            continue
        lines.append(f"| `{column.name}` | {column.unit or '-'} | {column.clock or '-'} | {column.meaning} |")
    lines += ["", "Clocks: " + "; ".join(f"**{name}**: {text}" for name, text in CLOCKS.items()) + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown() + "\n")
