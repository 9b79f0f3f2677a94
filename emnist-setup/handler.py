"""emnist-setup: POST a JSON body of config overrides to start a job; GET ?job_id=J for its status.

Defaults come from the function's environment (stack.yml). POST answers 202 once the workers are
queued (200 with the result when invocation_mode is `single`); GET answers {"state": "running" | "done" | "failed", ...}.
"""

import os

from faasgd.functions.emnist_setup import job_status, start_job


def handle(event, context):
    if event.method == "GET":
        status, body = job_status(event.query, os.environ)
    else:
        status, body = start_job(event.json(), os.environ, event.headers.get("X-Callback-Url"))
    return {"statusCode": status, "body": body}
