"""emnist-train: POST {"job_id", "worker_id"[, "iteration"]}; trains one Downpour worker.

`loop` jobs train to the stop rule in this invocation; `per-iteration` jobs train one epoch and
re-invoke this function asynchronously. A duplicate delivery trains nothing and answers
{"duplicate": true}; a call that must stop early (its deadline, SIGTERM) hands the worker on and
answers {"handed_off": true}. A header X-Chaos-Slow (`faasgd up --chaos slow:...`) slows the worker it names. GET /metrics answers the training metrics of the workers this replica runs
(Prometheus text format; faasgd.profile.exporter). Any other method is a 405.
"""

import os

from faasgd.errors import MethodNotAllowed
from faasgd.functions.emnist_train import metrics, train
from faasgd.functions.call_limits import call_budget
from faasgd.openfaas import CHAOS_SLOW_HEADER


def handle(event, context):
    if event.method == "GET" and event.path == "/metrics":
        return metrics()
    if event.method != "POST":
        raise MethodNotAllowed(event.method, ("POST",))
    status, body = train(event.json(), os.environ, event.headers.get("X-Call-Id", ""), call_budget(context),
                         slow=event.headers.get(CHAOS_SLOW_HEADER))
    return {"statusCode": status, "body": body}
