"""`faasgd cancel JOB`: stop a running job. Its workers stop at their next check (within a second at the defaults), no
call starts training after it, and the result is `cancelled`, keeping what the job measured and its last parameters
(`faasgd model JOB` exports them). The command waits up to --timeout seconds for the job to end (0: not at all)."""

from __future__ import annotations

from faasgd.cli.output import emit_json
from faasgd.cli.progress import console
from faasgd.cli.status import job_handle
from faasgd.errors import ConfigError

CANCEL_WAIT_S = 60.0  # the default wait for a cancelled job's workers to stop and its result to be written


def run(args) -> int:
    if not args.timeout >= 0:  # NaN too
        raise ConfigError("--timeout", f"must be a number of seconds >= 0, got {args.timeout!r}")
    job = job_handle(args)
    out = console()
    status = job.cancel()
    by = (status.get("cancelled") or {}).get("by") or "?"
    out.print(f"job {job.job_id}: cancelled (requested by {by}); its workers stop at their next check",
              highlight=False, markup=False)
    if args.timeout > 0:
        status = job.wait(args.timeout)
    state = status.get("state")
    if args.json:
        emit_json(status)
    if state == "running":
        out.print(f"job {job.job_id}: still running after {args.timeout:g} s (a worker not yet started stops when its "
                  f"call begins); watch it with: faasgd status {job.job_id} --watch", highlight=False, markup=False)
        return 0 if args.timeout == 0 else 1
    out.print(f"job {job.job_id}: {state}" + ("" if state == "cancelled" else " (it ended before its workers saw the "
                                                                               "cancel)"), highlight=False, markup=False)
    return 0 if state in ("cancelled", "done") else 1
