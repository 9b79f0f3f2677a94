"""stacking-driver: POST a JSON object of stacking config overrides to run a job; GET ?job_id=J for its status.

POST creates the job, puts the dataset, calls the trainers (at once or one after another), the reducer
and the metatrainer through the gateway and answers 200 with base_scores, ensemble_score and the time of
each phase (call it asynchronously to get the answer at its X-Callback-Url). GET answers the job's record:
{"state": "running" | "done" | "failed", "phase", ...}. Any other method is a 405.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.http_call import job_body
from faasgd.functions.stacking import drive, status


def handle(event, context):
    if event.method in ("GET", "HEAD"):
        code, body = status(event.query, os.environ)
    elif event.method == "POST":
        code, body = drive(job_body(event), os.environ)
    else:
        raise MethodNotAllowed(event.method, ("GET", "HEAD", "POST"))
    return {"statusCode": code, "body": body}
