"""One worker under each update rule on a real redis-server and a real memcached equals the single-process
oracle (support/rule_oracle.py): plain SGD for sum and average, plain AdaGrad for adagrad."""

from __future__ import annotations

import pytest

from faasgd import job
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store
from support import rule_oracle

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("rule", ["sum", "average", "adagrad"])
@pytest.mark.parametrize("kind", ["redis", "memcached"])
def test_one_worker_under_each_rule_equals_the_single_process_oracle(request, kind, rule):
    server = request.getfixturevalue(f"{kind}_server")
    config = rule_oracle.small_config(server.url, rule)
    with open_store(config.store_url, timeout_s=2.0) as store:
        job_id = job.create_job(store, config)
        final = run_worker(Call(config, store, job_id, 0))
        weights, version = store.get_weights(job_id)
    assert final["state"] == "finished" and final["epoch"] == config.max_epochs
    steps_per_epoch = -(-job.holdout(config)[0] // config.batch_size)  # the rows left after the validation rows
    assert version == final["pushes"] == 2 * steps_per_epoch  # n_fetch = n_push = 1: a push per step
    rule_oracle.assert_matches(config, weights, rule_oracle.one_worker(config, final["epoch"]))
