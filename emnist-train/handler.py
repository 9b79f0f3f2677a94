"""emnist-train: body {"job_id", "worker_id"[, "iteration"]}; trains one Downpour worker.

`loop` jobs train to the stop rule in this invocation; `per-iteration` jobs train one epoch and
re-invoke this function asynchronously. A duplicate delivery trains nothing and answers
{"duplicate": true}.
"""

import os

from faasgd.functions.emnist_train import train


def handle(event, context):
    status, body = train(event.json(), os.environ, event.headers.get("X-Call-Id", ""))
    return {"statusCode": status, "body": body}
