"""What a person sees: live per-worker progress and the end-of-job summary table."""

from __future__ import annotations

import sys
from typing import TextIO


def _num(value, fmt: str = "{:,.0f}", missing: str = "-") -> str:
    return missing if value is None else fmt.format(value)


def worker_line(worker_id: int, record: dict | None, max_epochs: int, width: int = 20) -> str:
    """One line per worker: a bar over epochs, then accuracy, loss and throughput."""
    if not record:
        return f"worker {worker_id:>2}  {'.' * width}  starting"
    epoch = int(record.get("epoch", 0))
    filled = min(width, round(width * epoch / max(1, max_epochs)))
    bar = "#" * filled + "." * (width - filled)
    return (
        f"worker {worker_id:>2}  {bar}  epoch {epoch:>3}/{max_epochs}"
        f"  acc {_num(record.get('accuracy'), '{:.4f}')}"
        f"  loss {_num(record.get('loss'), '{:.4f}')}"
        f"  {_num(record.get('samples_per_s'))} samples/s"
        f"  pushes {record.get('pushes', 0)}  fetches {record.get('fetches', 0)}"
        f"  {record.get('state', 'running')}"
    )


class LiveProgress:
    """Redraws the worker lines in place on a terminal; elsewhere prints a line when an epoch ends."""

    def __init__(self, max_epochs: int, out: TextIO = sys.stdout):
        self.max_epochs = max_epochs
        self.out = out
        self.tty = out.isatty()
        self.drawn = 0
        self.seen: dict[int, tuple] = {}

    def __call__(self, progress: dict[int, dict | None]) -> None:
        lines = [worker_line(i, progress[i], self.max_epochs) for i in sorted(progress)]
        if self.tty:
            if self.drawn:
                self.out.write(f"\x1b[{self.drawn}F")
            self.out.write("".join(f"\x1b[2K{line}\n" for line in lines))
            self.drawn = len(lines)
        else:
            for i, line in zip(sorted(progress), lines):
                record = progress[i] or {}
                key = (record.get("epoch"), record.get("state"))
                if record and self.seen.get(i) != key:
                    self.seen[i] = key
                    self.out.write(line + "\n")
        self.out.flush()


def summary(result: dict, progress: dict[int, dict | None] | None = None) -> str:
    """The end-of-job table: one row per worker, then the job's result."""
    rows = [("worker", "epochs", "samples", "samples/s", "pushes", "fetches", "conflicts", "staleness", "accuracy")]
    for i, record in sorted((progress or {}).items()):
        record = record or {}
        rows.append((
            str(i), str(record.get("epoch", 0)), _num(record.get("samples")), _num(record.get("samples_per_s")),
            str(record.get("pushes", 0)), str(record.get("fetches", 0)), str(record.get("conflicts", 0)),
            _num(record.get("last_staleness"), "{}"), _num(record.get("accuracy"), "{:.4f}"),
        ))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    table = "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows)
    ttt = result.get("time_to_target_s")
    head = f"job {result.get('job_id')}: {result.get('state')}"
    if result.get("error"):
        head += f" - {result['error']}"
    lines = [
        head,
        table if progress else "",
        f"final accuracy   {_num(result.get('final_accuracy'), '{:.4f}')}"
        f"  (target {result.get('target_accuracy')})",
        f"time to target   {_num(ttt, '{:.1f} s', 'not reached')}"
        + (f"  (accuracy {result['accuracy_at_target']:.4f} when reached)" if result.get("accuracy_at_target") else ""),
        f"epochs           {_num(result.get('epochs'), '{:.2f}')}   samples {_num(result.get('samples'))}"
        f"   samples/s {_num(result.get('samples_per_s'))}",
        f"pushes {result.get('pushes')}   fetches {result.get('fetches')}   conflicts {result.get('conflicts')}"
        f"   retries {result.get('retries')}",
        f"staleness p50 {_num(result.get('staleness_p50'), '{:g}')}   p99 {_num(result.get('staleness_p99'), '{:g}')}",
    ]
    return "\n".join(line for line in lines if line)
