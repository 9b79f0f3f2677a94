"""`--tensorboard DIR`: a job's event files, read by TensorBoard (`tensorboard --logdir DIR`).

    DIR/<job_id>/                    the job's curves: validation_accuracy and test_accuracy at every evaluation,
                                     samples_per_s at every check (since its run start), and its final figures
                                     (final/<name>) at its last step
    DIR/<job_id>/worker-<i>/         one run per worker: the evaluations it made, worker/samples_per_s at each of
                                     its epoch ends (step: its own samples; timeline.Rate), and its record's counts
                                     at its end (samples, pushes, fetches, conflicts, retries, cpu_s)

The step of every scalar is the samples trained into the parameters (timeline.Point), its wall time the job's clock,
so runs of different jobs line up by samples or by time. Written when the job ends, by tensorboardX: it writes the
event files without TensorFlow, is small (protobuf and numpy) and kept up; TensorBoard itself, which reads them, is
not needed to write them.
"""

from __future__ import annotations

import os

from tensorboardX import SummaryWriter

from faasgd.tracking.feed import Run
from faasgd.tracking.timeline import Point, Rate

WORKER_COUNTS = ("samples", "pushes", "fetches", "conflicts", "retries", "cpu_s")


def write(run: Run, directory: str) -> str:
    """The run's event files under `directory`/<job_id>; that folder."""
    root = os.path.join(directory, run.job_id)
    last = max([p.samples for p in run.points] + [int(run.result.get("samples") or 0)])
    end = float(run.result.get("finished_at") or 0.0) or None
    with SummaryWriter(root) as job:
        for point in run.points:
            job.add_scalar("validation_accuracy", point.accuracy, point.samples, walltime=point.at)
            if point.test_accuracy is not None:
                job.add_scalar("test_accuracy", point.test_accuracy, point.samples, walltime=point.at)
        for rate in run.rates():
            job.add_scalar("samples_per_s", rate.samples_per_s, rate.samples, walltime=rate.at)
        for name, value in run.final().items():
            job.add_scalar(f"final/{name}", value, last, walltime=end)
        job.add_text("config", "\n".join(f"    {k}: {v}" for k, v in sorted(run.config.items())), 0, walltime=end)
    for worker_id, record in enumerate(run.workers):
        write_worker(os.path.join(root, f"worker-{worker_id}"), [p for p in run.points if p.worker_id == worker_id],
                     [r for r in run.worker_rates if r.worker_id == worker_id], record or {}, end)
    return root


def write_worker(folder: str, points: list[Point], rates: list[Rate], record: dict, end: float | None) -> None:
    with SummaryWriter(folder) as worker:
        for point in points:
            worker.add_scalar("validation_accuracy", point.accuracy, point.samples, walltime=point.at)
        for rate in rates:
            worker.add_scalar("worker/samples_per_s", rate.samples_per_s, rate.samples, walltime=rate.at)
        step = int(record.get("samples") or 0)
        for name in WORKER_COUNTS:
            if record.get(name) is not None:
                worker.add_scalar(f"worker/{name}", float(record[name]), step, walltime=end)


class TensorBoard:
    """The sink: writes the job's event files when it ends."""

    def __init__(self, directory: str):
        self.directory = directory

    def point(self, point: Point) -> None:
        pass  # written whole from the run, on the job's clock

    def finish(self, run: Run) -> None:
        write(run, self.directory)
