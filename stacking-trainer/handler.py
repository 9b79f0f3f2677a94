"""stacking-trainer: POST {"job_id", "trainer_id", "store", "dataset"} from the driver; fits one base model.

Answers {"model", "predictions"}: the objects themselves (transfer inline, base64 npz) or their names
in the job's store (transfer store). Any method but POST is a 405.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.stacking import work


def handle(event, context):
    if event.method != "POST":
        raise MethodNotAllowed(event.method, ("POST",))
    code, body = work("stacking-trainer", event.json(), os.environ)
    return {"statusCode": code, "body": body}
