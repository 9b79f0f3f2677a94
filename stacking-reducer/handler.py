"""stacking-reducer: POST {"job_id", "store", "trainers": [{"model", "predictions"}, ...]} from the driver.

Reads and checks every trainer's model and predictions, stacks the predictions; answers {"models",
"meta_features"} (inline objects or store names). Any method but POST is a 405.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.stacking import work


def handle(event, context):
    if event.method != "POST":
        raise MethodNotAllowed(event.method, ("POST",))
    code, body = work("stacking-reducer", event.json(), os.environ)
    return {"statusCode": code, "body": body}
