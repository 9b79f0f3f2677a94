"""Downpour SGD, the asynchronous workload: workers fetch and push through the store, never waiting for each other.

    worker.py      DownpourWorker (a faasgd.worker Worker) and load_worker, its loader
    exchange.py    its store operations: fetch, push, the synchronisation points
    schedule.py    the communication modes (blocking, background, coalesce) as schedules chosen once
    comm.py        the StoreThread running its store operations, on a thread of their own or inline
    stop_rule.py   the stop rule's checks between epoch ends
    residual.py    error feedback of compressed pushes, kept with the checkpoint at a call's clean end

It imports the shared layers (faasgd.worker, store, job, data, model, config) and no other workload.
"""
