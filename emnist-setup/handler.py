"""emnist-setup: POST a JSON object (or a form) of config overrides to start a job ({} for every default; an empty
body, or a query string other than the queue's callback below, is a 400); GET ?job_id=J for its status.

Defaults come from the function's environment (stack.yml). POST answers 202 once the workers are
queued (200 with the result when invocation_mode is `single`); GET answers {"state": "running" | "done" |
"failed", ...}; GET ?job_id=J&model=npz answers the job's model file (application/octet-stream).
POST ?job_id=J&worker=W&delivery=1 is the queue's callback at the end of a worker's call (the fan-out sets it).
POST ?job_id=J&cancel=1 cancels a running job (its workers stop at their next check; 409 once it has ended).
POST ?job_id=J&restore=1 with J's model file as the body puts its parameters back in a store that lost J (201), for
a job resuming J.
Any other method is a 405 naming the allowed ones: only POST starts work.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.emnist_setup import cancel_request, delivery_report, job_status, restore_request, start_job
from faasgd.functions.http_call import job_body
from faasgd.functions.call_limits import call_budget


def handle(event, context):
    if event.method in ("GET", "HEAD"):
        status, body = job_status(event.query, os.environ)
    elif event.method == "POST" and "delivery" in event.query:  # the queue's report on a worker's call
        status, body = delivery_report(event.query, event.headers, os.environ)
    elif event.method == "POST" and "cancel" in event.query:  # a request to stop a running job
        status, body = cancel_request(event.query, os.environ)
    elif event.method == "POST" and "restore" in event.query:  # a model file put back for a job resuming it
        status, body = restore_request(event.query, event.body, os.environ)
    elif event.method == "POST":
        status, body = start_job(job_body(event), os.environ, event.headers.get("X-Callback-Url"), call_budget(context))
    else:
        raise MethodNotAllowed(event.method, ("GET", "HEAD", "POST"))
    return {"statusCode": status, "body": body}
