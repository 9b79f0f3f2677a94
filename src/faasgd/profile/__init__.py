"""Resource profiles of workers: CPU, memory and store traffic sampled through a run (issue 16).

    sampler         the sampling thread (what is measured, and how per worker)
    bursts          Driple's burst / idle / consumption figures of a series, additive across calls and workers
    worker_profile  one worker call's profile: stats into its record, series into `profile:<worker>`
    figures         a job's columns (MEASURES) from its workers' records
"""

from faasgd.profile.bursts import SERIES, THRESHOLDS
from faasgd.profile.figures import MEASURES, job_figures
from faasgd.profile.worker_profile import WorkerProfile

__all__ = ["MEASURES", "SERIES", "THRESHOLDS", "WorkerProfile", "job_figures"]
