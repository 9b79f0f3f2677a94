"""Resource profiles of workers: CPU, memory and store traffic sampled through a run (issue 16).

    sampler         the sampling thread (what is measured, and how per worker)
    bursts          Driple's burst / idle / consumption figures of a series, additive across calls and workers
    worker_profile  one worker call's profile: stats into its record, series into `profile:<worker>`
    figures         a job's columns (MEASURES) from its workers' records
"""

from faasgd.profile.bursts import SERIES, THRESHOLDS
from faasgd.profile.figures import MEASURES, job_figures

__all__ = ["MEASURES", "SERIES", "THRESHOLDS", "WorkerProfile", "job_figures"]


def __getattr__(name: str):
    """WorkerProfile on first use: it brings the sampler and the Prometheus exporter (prometheus_client), which a
    worker's call needs and the job's figures (job/result.py, every `faasgd train` and `status`) do not."""
    if name == "WorkerProfile":
        from faasgd.profile.worker_profile import WorkerProfile

        return WorkerProfile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
