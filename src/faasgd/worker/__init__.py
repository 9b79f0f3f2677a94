"""What every worker kind's call shares, knowing no algorithm: one invocation of a worker and what keeps it safe.

    protocol.py    Worker: what a trainer offers a call (Downpour's and LambdaML's both implement it); WorkerLoader
    invocation.py  one call in loop or per-iteration mode: lease, resume from the record, train, hand off
    ending.py      a worker's last record, and the job's result once the last worker ends
    lease.py       which delivery of a call owns the worker
    liveness.py    heartbeats and "has the job ended", a mixin of both trainers
    store_calls.py its store round trips, retried across an outage (a mixin of both trainers)
    budget.py      when a call must stop (its deadline, its replica draining): HandOff, Superseded
    progress.py    the worker's record: everything that must survive a call
    call_clock.py  a call's clock on the job's timeline, what it is billed, and its CPU clocks (faasgd.call_cpu)
    curve_rows.py  which epoch ends evaluate the curves' rows (one worker a round, every worker at its last)

No module here imports a workload (faasgd.downpour, faasgd.lambdaml, faasgd.stacking): the caller passes the
trainer's loader (faasgd.functions.workloads picks it by the job's `algorithm`). Nothing is imported here,
so importing faasgd.worker.budget loads only that module.
"""
