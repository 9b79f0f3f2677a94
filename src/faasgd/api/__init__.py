"""faasgd from Python (a notebook, a script): the `faasgd` command's verbs as functions. The command itself
calls these, so both behave alike and raise the same typed errors (faasgd.errors), each naming the field
or the next step.

    from faasgd import api

    with api.runtime(port=0):                          # `faasgd up` ... `faasgd down`
        job = api.train(dataset="synthetic", train_samples=4000, hidden_sizes=[32])   # `faasgd train`
        job.wait()                                     # `faasgd status J --watch`
        frame = api.results(job, as_frame=True)        # its result record as a DataFrame row
        model = api.load_model(job)                    # `faasgd model J -o ...` without the file
    api.evaluate(model)                                # `faasgd evaluate`
    api.results("results/", batches=[3], as_frame=True)   # `faasgd results runs --batch 3`

local_runtime  start_runtime, stop_runtime, runtime (a context manager), connect, gateway_url
jobs           train, submit, job (an existing one), Job (status, wait, result, model_bytes)
runs           results (rows or a DataFrame), batches, compare
models         load_model, save_model, evaluate
hints          the not-found errors that say where a job was looked for and how to name another store
"""

from faasgd.api.jobs import Job, job, request_body, submit, train
from faasgd.api.local_runtime import Runtime, connect, gateway_url, runtime, start_runtime, stop_runtime
from faasgd.api.models import evaluate, load_model, save_model
from faasgd.api.runs import batches, compare, open_results, results
from faasgd.errors import ConfigError, FaasgdError, JobNotFound  # what the functions raise, at hand

__all__ = ["ConfigError", "FaasgdError", "Job", "JobNotFound", "Runtime", "batches", "compare", "connect", "evaluate", "gateway_url", "job", "load_model",
           "open_results", "request_body", "results", "runtime", "save_model", "start_runtime", "stop_runtime",
           "submit", "train"]
