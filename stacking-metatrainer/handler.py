"""stacking-metatrainer: POST {"job_id", "store", "dataset", "models", "meta_features"} from the driver.

Fits the meta-model (LogisticRegression) on the stacked predictions; answers {"base_scores",
"ensemble_score", "full_model"}. Any method but POST is a 405.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.stacking import work


def handle(event, context):
    if event.method != "POST":
        raise MethodNotAllowed(event.method, ("POST",))
    code, body = work("stacking-metatrainer", event.json(), os.environ)
    return {"statusCode": code, "body": body}
