"""The process `faasgd train --direct`'s workers fork from: multiprocessing's forkserver, started first.

A worker runs faasgd.cli.direct.worker_process, whose imports (numpy, the config model, the worker, the store's
client: ~0.5 s of CPU) a spawned process did itself before its first step. The forkserver is a fresh interpreter
that does them once (WORKER_MODULES, with one BLAS thread), and each worker forks from it with them done, in
milliseconds. `faasgd train --direct` starts it before its own parser imports the config model (cli/main.py), so
the two import on the machine's two cores at once and the workers can start as soon as the job exists. It holds
imports only, no store client or connection (pymemcache's clients are not fork-aware): a worker shares nothing
with the command's process, as a spawned one did. It exits with the process that started it (its end of a pipe
closes), once its imports are done: a command refused for a bad flag leaves it for at most those (< 1 s).

Light: the command line imports it before its own heavier imports (numpy, the config model).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

# What a worker process runs: this module's caller and its store's clients (the rest they import)
# faasgd.cli.main: a forked worker imports the command's main module again (multiprocessing's preparation: the `faasgd`
# script, which imports it), ~47 ms of CPU each unless it is here already
WORKER_MODULES = ["faasgd.cli.main", "faasgd.cli.direct", "faasgd.store.redis_store", "faasgd.store.memcached_store",
                  "threadpoolctl"]


def start() -> BaseContext:
    """Start the forkserver if it is not running (it imports WORKER_MODULES with one BLAS thread, the replicas'
    THREADS, in its environment; this process's environment is left as it was) and return the context that
    launches processes through it."""
    import multiprocessing
    import multiprocessing.forkserver

    from faasgd.local import THREADS

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_MODULES)
    saved = {key: os.environ.get(key) for key in THREADS}
    os.environ.update(THREADS)  # the forkserver's environment is this process's at its start
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return context


def wanted(argv: list[str]) -> bool:
    """Whether `argv` (the command's words after `faasgd`) runs workers here: `train --direct` (or `resume
    --direct`), not a dry run or its help."""
    return argv[:1] in (["train"], ["resume"]) and "--direct" in argv and not {"--dry-run", "-h", "--help"} & set(argv)
