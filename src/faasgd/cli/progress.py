"""What a person sees, on rich: live per-worker progress while a job runs, and the summary when it ends.

On a terminal the worker table is redrawn in place (rich.live); elsewhere (pipes, CI logs) a line is
printed per worker whenever its epoch or state changes, so logs stay readable.
"""

from __future__ import annotations

from typing import Mapping

from rich.console import Console
from rich.live import Live
from rich.table import Table

from faasgd.cli.output import console, progress_console  # console: the commands' own, routed by their flags
from faasgd.cli.terminal_text import cell, visible
from faasgd.minibatch import batch_note

WORKER_COLUMNS = ("worker", "epoch", "val accuracy", "loss", "samples/s", "pushes", "fetches", "conflicts", "state")


def _num(value, fmt: str = "{:,.0f}", missing: str = "-") -> str:
    return missing if value is None else fmt.format(value)


def val_accuracy(record: dict) -> str:
    """A worker's validation accuracy, with its epoch when that is not the worker's latest (Downpour's epoch ends
    are evaluated by one worker a round: worker/curve_rows.py)."""
    text = _num(record.get("accuracy"), "{:.4f}")
    evaluated = record.get("accuracy_epoch")
    return f"{text} (epoch {evaluated})" if evaluated and evaluated != record.get("epoch") else text


def worker_cells(worker_id: int, record: dict | None, max_epochs: int) -> tuple[str, ...]:
    """One worker's row: epoch bar, accuracy, loss, throughput, store traffic, state."""
    if not record:
        return (str(worker_id), f"0/{max_epochs}", "-", "-", "-", "0", "0", "0", "starting")
    epoch = int(record.get("epoch", 0))
    width = 10
    bar = "#" * min(width, round(width * epoch / max(1, max_epochs)))
    return (str(worker_id), f"{bar:<{width}} {epoch}/{max_epochs}", val_accuracy(record),
            _num(record.get("loss"), "{:.4f}"), _num(record.get("samples_per_s")), str(record.get("pushes", 0)),
            str(record.get("fetches", 0)), str(record.get("conflicts", 0)), str(record.get("state", "running")))


def worker_line(worker_id: int, record: dict, max_epochs: int) -> str:
    """One labelled line (for logs and pipes, where a table cannot be redrawn)."""
    _, epoch, accuracy, loss, rate, pushes, fetches, conflicts, state = worker_cells(worker_id, record, max_epochs)
    return (f"worker {worker_id:>2}  epoch {epoch.split()[-1]:>7}  validation accuracy {accuracy}  loss {loss}  {rate} samples/s"
            f"  pushes {pushes}  fetches {fetches}  conflicts {conflicts}  {state}")


def worker_table(workers: list[dict | None], max_epochs: int) -> Table:
    table = Table(*WORKER_COLUMNS, box=None, pad_edge=False)
    for i, record in enumerate(workers):
        table.add_row(*map(cell, worker_cells(i, record, max_epochs)))
    return table


class LiveProgress:
    """Feed it job statuses (as `wait_for_job`'s on_status); call close() when the job has ended."""

    def __init__(self, out: Console | None = None):
        self.out = out or progress_console()
        self.live: Live | None = None
        self.seen: dict = {}  # worker id -> (epoch, state) shown; "waiting" -> the waiting message shown

    def __call__(self, status: dict) -> None:
        if not status.get("config"):
            return  # the store did not answer this time: nothing new to show
        workers, max_epochs = status["workers"], status["config"]["max_epochs"]
        waiting = (status.get("waiting") or {}).get("message")
        if self.out.is_terminal:
            if self.live is None:
                self.live = Live(console=self.out, auto_refresh=False)
                self.live.start()
            table = worker_table(workers, max_epochs)
            table.caption = cell(f"waiting: {waiting}") if waiting else None
            self.live.update(table, refresh=True)
            return
        if waiting and self.seen.get("waiting") != waiting:
            self.out.print(visible(f"waiting: {waiting}"), highlight=False, markup=False)
        self.seen["waiting"] = waiting
        for i, record in enumerate(workers):
            key = (record or {}).get("epoch"), (record or {}).get("state")
            if record and self.seen.get(i) != key:
                self.seen[i] = key
                self.out.print(visible(worker_line(i, record, max_epochs)), highlight=False, markup=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def print_summary(result: dict, workers: list[dict | None] | None = None, out: Console | None = None) -> None:
    """The end-of-job report: one row per worker, then the job's result."""
    out = out or console()
    head = f"job {result.get('job_id')}: {result.get('state')}"
    out.print(visible(head + (f" - {result['error']}" if result.get("error") else "")), highlight=False, markup=False)
    if workers:
        table = Table("worker", "epochs", "samples", "samples/s", "pushes", "fetches", "conflicts", "staleness",
                      "val accuracy", box=None, pad_edge=False)
        for i, record in enumerate(workers):
            record = record or {}
            table.add_row(*map(cell, (str(i), str(record.get("epoch", 0)), _num(record.get("samples")),
                                      _num(record.get("samples_per_s")), str(record.get("pushes", 0)),
                                      str(record.get("fetches", 0)), str(record.get("conflicts", 0)),
                                      _num(record.get("last_staleness"), "{}"), val_accuracy(record))))
        out.print(table)
    kept = "kept at the crossing" if result.get("reached_target") else "the final parameters"
    lines = [
        f"model accuracy   validation {_num(result.get('final_validation_accuracy'), '{:.4f}')}   test "
        f"{_num(result.get('final_test_accuracy'), '{:.4f}')}  ({kept}; target {result.get('target_accuracy')} "
        "on validation)",
        f"to target        {_num(result.get('time_to_target_s'), '{:.1f} s', 'not reached')}"
        + (f"   epochs {_num(result.get('epochs_to_target'), '{:.2f}')}   samples {_num(result.get('samples_to_target'))}"
           if result.get("reached_target") else ""),
        f"in total         {_num(result.get('wall_s'), '{:.1f} s')}   epochs {_num(result.get('epochs'), '{:.2f}')}"
        f"   samples {_num(result.get('samples'))}   samples/s {_num(result.get('samples_per_s'))}",
        f"pushes {result.get('pushes')}   fetches {result.get('fetches')}   conflicts {result.get('conflicts')}"
        f"   retries {result.get('retries')}",
        f"staleness p50 {_num(result.get('staleness_p50'), '{:g}')}   p99 {_num(result.get('staleness_p99'), '{:g}')}",
        f"workers          {result.get('number_of_workers')}, at most {_num(result.get('max_concurrent_workers'))} "
        f"training at once",
    ]
    if result.get("warning"):
        lines.insert(1, f"warning          {result['warning']}")
    for line in lines + split_lines(result) + cpu_lines(result) + cost_lines(result) + resource_lines(result):
        out.print(visible(line), highlight=False, markup=False)


def split_lines(result: dict) -> list[str]:
    """Where the workers' calls went (job/result.py time_split); none when nothing was split (rounds, older results)."""
    worker_s = result.get("worker_s") or 0.0
    if not result.get("compute_s") or worker_s <= 0:
        return []
    parts = (("steps", "compute_s"), ("minibatches", "batches_s"), ("evaluation", "eval_s"), ("loading", "load_s"),
             ("waiting", "comm_wait_s"))
    shown = "   ".join(f"{name} {result[key] / worker_s:.0%}" for name, key in parts)
    rest = 1 - sum(result[key] for _, key in parts) / worker_s
    return [f"workers' time    {worker_s:.1f} worker-s: {shown}   rest {rest:.0%}"]


CPU_CLOCKS = {"process": "process clocks", "threads": "thread clocks", "mixed": "process and thread clocks"}


def cpu_lines(result: dict) -> list[str]:
    """What the job cost in CPU, counted (job/result.py): the workers', the store's, per sample; none for an older
    result."""
    if result.get("cpu_clock") is None:
        return []
    store, rate = result.get("store_cpu_s"), result.get("cpu_s_per_sample")
    store_text = "" if store is None else f" + {store:,.2f} store"
    note = "store: not told" if store is None else "store: its own count"
    clocks = CPU_CLOCKS.get(result["cpu_clock"], result["cpu_clock"])
    return [f"cpu              {result['cpu_s']:,.2f} CPU-s workers{store_text} = "
            f"{_num(None if rate is None else rate * 1e6, '{:,.1f}')} µs a sample ({clocks}; {note})"]


def cost_lines(result: dict) -> list[str]:
    """What the job was billed for and its cost at the default prices (faasgd.cost); none for an older result."""
    if result.get("requests") is None:
        return []
    billed = (f"{_num(result.get('billed_gb_s'), '{:,.3f} GB-s', 'GB-s unknown (no memory_limit)')}"
              f" at {_num(result.get('memory_mb'), '{:,.0f} MB', '? MB')}, {result.get('requests')} requests,"
              f" {result.get('cold_starts')} cold starts, {result.get('duplicate_calls')} duplicates")
    return [f"cost             {_num(result.get('cost_usd'), '${:,.7f}', 'unknown')}   FaaS "
            f"{_num(result.get('cost_faas_usd'), '${:,.7f}', 'unknown')} ({billed})   store "
            f"{_num(result.get('cost_store_usd'), '${:,.7f}', 'unknown')}"
            " (default prices: AWS Lambda x86, cache.t3.micro)"]


RESOURCE_ROWS = (("cpu", "cores", None, "", "cpu_peak"), ("rss", "MB", None, "", "rss_peak_mb"),
                 ("tx", "B/s", "tx_bytes", "{:,.0f} bytes", "tx_peak_bps"),
                 ("rx", "B/s", "rx_bytes", "{:,.0f} bytes", "rx_peak_bps"))


def resource_lines(result: dict) -> list[str]:
    """The job's resource profile (profile/figures.py): Driple's figures per series, byte totals, peaks; none if
    unprofiled (its CPU-seconds are counted, not sampled: cpu_lines)."""
    if result.get("rss_peak_mb") is None:
        return []
    lines = ["resources        burst s   idle s    burst use        peak   total"]
    for name, unit, total, total_fmt, peak in RESOURCE_ROWS:
        lines.append(f"  {name:<14} {_num(result.get(f'{name}_burst_s'), '{:.2f}'):>8} "
                     f"{_num(result.get(f'{name}_idle_s'), '{:.2f}'):>8} "
                     f"{_num(result.get(f'{name}_burst_use'), '{:,.4g}'):>12} {_num(result.get(peak), '{:,.4g}'):>11} "
                     f"{unit:<6}{_num(result.get(total), total_fmt, '') if total else ''}")
    return lines


def print_batch_note(config: Mapping | None, out: Console | None = None) -> None:
    """The summary's last line: batch_note's on the job's config record, when its rows a step lie far above one
    worker's (faasgd.minibatch); nothing otherwise."""
    note = batch_note(config) if config else None
    if note:
        (out or console()).print(note, highlight=False, markup=False)
