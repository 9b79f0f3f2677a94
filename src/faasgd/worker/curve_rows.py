"""Which epoch ends evaluate the curves' rows: the test rows (the test curve, reported only, never a stop rule) for
every trainer, and for Downpour the validation rows too (its validation curve; its stop rule is the checks).

The W workers' e-th epoch ends come at about the same point of the job (each worker's epoch is its 1/W of the
rows, and a synchronous algorithm's workers hold the same parameters there), so W evaluations would cost
W x test_samples rows a job epoch of nearly the same figure (Fashion-MNIST, 2 workers: as many rows as the
validation and the stop rule's checks together), and as many again of validation rows: evaluation work that grew
with the workers and so slowed every time-to-target of more workers. The e-th ends are evaluated by worker
(e - 1) mod W alone, and every worker's last epoch (the curve's final points); one worker evaluates at every epoch.
"""

from __future__ import annotations


def evaluates_test_rows(epoch: int, worker_id: int, workers: int, last: bool) -> bool:
    """Whether worker `worker_id` of `workers` evaluates the test rows at the end of its epoch `epoch` (from 1)."""
    return last or (epoch - 1) % workers == worker_id % workers
