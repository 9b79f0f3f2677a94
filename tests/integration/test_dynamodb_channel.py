"""The DynamoDB channel against a real DynamoDB-compatible server (moto's server mode on loopback, started and
stopped by the `dynamodb_endpoint` fixture): the blob-space contract, values split across items, merged slices
written once under a conditional put, rounds of two workers, and the faults a dead endpoint or table gives."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from support import blob_contract as contract
from faasgd.channels import DynamoSpace
from faasgd.channels.dynamodb import CHUNK_BYTES
from faasgd.errors import StateLost, StoreError, StoreUnavailable
from faasgd.lambdaml.rounds import Exchange, ExchangeConfig, RoundState, run_rounds
from faasgd.local.services.stores import LOOPBACK, free_port

pytestmark = pytest.mark.integration


def items(endpoint, table: str) -> dict[str, dict]:
    pages = endpoint.client().get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return {item["k"]["S"]: item for page in pages for item in page["Items"]}


def of_job(found: dict, job: str) -> list[str]:
    return sorted(key for key in found if key.startswith(job + "/"))


@pytest.fixture
def space(dynamodb_endpoint):
    return DynamoSpace(dynamodb_endpoint.settings)


@pytest.mark.parametrize("check", contract.CHECKS, ids=lambda c: c.__name__[6:])
def test_blob_contract(space, check):
    check(space)


def test_a_value_over_the_item_limit_is_split_and_an_overwrite_frees_its_chunks(space, dynamodb_endpoint):
    job, long = contract.new_job(), contract.payload(3 * CHUNK_BYTES + 5, 3)  # four chunks: over 400 KB
    space.put_blob(job, "model", long)
    keys = of_job(items(dynamodb_endpoint, "faasgd-temp"), job)
    assert len(keys) == 1 + 4 and f"{job}/model" in keys
    assert space.get_blob(job, "model") == long
    space.put_blob(job, "model", b"short")
    assert of_job(items(dynamodb_endpoint, "faasgd-temp"), job) == [f"{job}/model"]  # the old chunks are gone
    assert space.get_blob(job, "model") == b"short"


def test_a_chunk_changed_under_its_item_is_lost_state(space, dynamodb_endpoint):
    job = contract.new_job()
    space.put_blob(job, "model", contract.payload(CHUNK_BYTES + 1, 4))
    chunk = next(k for k in of_job(items(dynamodb_endpoint, "faasgd-temp"), job) if "#" in k)
    dynamodb_endpoint.client().put_item(TableName="faasgd-temp", Item={"k": {"S": chunk}, "v": {"B": b"torn"}})
    with pytest.raises(StateLost) as e:
        space.get_blob(job, "model")
    assert "does not match its length and sha256" in str(e.value) and "faasgd-temp" in str(e.value)


def test_a_merged_slice_is_written_once_in_the_merged_table(space, dynamodb_endpoint):
    job, first, second = contract.new_job(), contract.payload(500_000, 5), b"a later merge"
    assert space.put_merged(job, "rounds:r0:m0of1", first) is True
    assert space.put_merged(job, "rounds:r0:m0of1", second) is False
    assert space.get_merged(job, "rounds:r0:m0of1") == first
    assert space.get_blob(job, "rounds:r0:m0of1") is None  # not in the temporary table
    merged = items(dynamodb_endpoint, "faasgd-merged")
    assert len(of_job(merged, job)) == 1 + 2  # the refused write left no chunk behind


def test_two_mergers_of_one_round_hold_the_same_bits(space):
    """Worker 0 and a duplicate of it (a re-invocation, a redelivered call) merge round 0 at once, each with a
    vector of its own: the conditional put stores one merge, and both return it."""
    config, job = ExchangeConfig(workers=2, op="sum", round_timeout_s=20), contract.new_job()
    mine = [np.full(1000, 1.0, np.float32), np.full(1000, 100.0, np.float32)]  # two entries of worker 0
    theirs = np.arange(1000, dtype=np.float32)
    results = {}

    def enter(entry):
        results[entry] = Exchange(space, job, 0, config).all_reduce(0, mine[entry])[0]

    threads = [threading.Thread(target=enter, args=(e,)) for e in (0, 1)]
    for t in threads:
        t.start()
    worker_1 = Exchange(space, job, 1, config).all_reduce(0, theirs)[0]
    for t in threads:
        t.join(30)
    assert results[0].tobytes() == results[1].tobytes() == worker_1.tobytes()
    assert any(results[0].tobytes() == (m + theirs).tobytes() for m in mine)


def test_a_duplicated_contribution_is_not_merged_twice(space):
    """Worker 1's contribution arrives twice (its call redelivered): worker 0's sum counts it once."""
    config, job = ExchangeConfig(workers=2, op="sum", round_timeout_s=20), contract.new_job()
    own, theirs = np.full(10, 2.0, np.float32), np.full(10, 3.0, np.float32)
    entries = [threading.Thread(target=lambda: Exchange(space, job, 1, config).all_reduce(0, theirs))
               for _ in range(2)]
    for t in entries:
        t.start()
    while space.get_blob(job, "rounds:r0:p0of1:w1") is None:  # a contribution is in before worker 0 merges
        threading.Event().wait(0.01)
    merged, _ = Exchange(space, job, 0, config).all_reduce(0, own)
    for t in entries:
        t.join(30)
    np.testing.assert_array_equal(merged, own + theirs)  # 5, not 8


@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_grad_avg_with_two_workers_reaches_its_rounds_with_each_merge_written_once(space, pattern):
    """Synchronous SGD on a least-squares model: both workers end with the bits of the plain computation, and
    every round's every slice was stored by exactly one conditional put."""
    rng = np.random.default_rng(0)
    X, w_true = rng.normal(size=(2, 4, 64, 30)).astype(np.float32), rng.normal(size=30).astype(np.float32)
    job, rounds, written = contract.new_job(), 6, []

    class Counting(DynamoSpace):
        def put_merged(self, job_id, name, data):
            stored = super().put_merged(job_id, name, data)
            written.append((name, stored))
            return stored

    counting = Counting(space.settings)

    def grad_of(worker):
        def grad(params, r):
            A = X[worker, r % 4]
            residual = A @ params - A @ w_true
            return float(residual @ residual / len(A)), (2 * A.T @ residual / len(A)).astype(np.float32)
        return grad

    finals = {}

    def train(worker):
        exchange = Exchange(counting, job, worker, ExchangeConfig(pattern=pattern, workers=2, round_timeout_s=20))
        finals[worker] = run_rounds("grad_avg", RoundState(np.zeros(30, np.float32)), grad_of(worker), exchange,
                                    lr=0.05, rounds=rounds)[0]

    threads = [threading.Thread(target=train, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    params = np.zeros(30, np.float32)
    for r in range(rounds):
        mean = (np.float64(grad_of(0)(params, r)[1]) + grad_of(1)(params, r)[1]) / 2
        params = params - np.float32(0.05) * mean.astype(np.float32)
    assert finals[0].round_no == finals[1].round_no == rounds
    assert finals[0].params.tobytes() == finals[1].params.tobytes() == params.tobytes()
    slices = 2 if pattern == "reduce_scatter" else 1
    assert sorted(written) == sorted({(name, True) for name, _ in written}) and len(written) == rounds * slices


def test_a_missing_table_is_named(dynamodb_endpoint):
    space = DynamoSpace(replace(dynamodb_endpoint.settings, merged_table="no-such-table"))
    with pytest.raises(StoreError) as e:
        space.ping()
    assert "no-such-table" in str(e.value) and "no such table" in str(e.value)


def test_a_dead_endpoint_is_unavailable_naming_it_and_never_a_key(dynamodb_endpoint):
    dead = f"http://{LOOPBACK}:{free_port()}"
    settings = replace(dynamodb_endpoint.settings, endpoint_url=dead, secret_key="SECRET/never+shown")
    with pytest.raises(StoreUnavailable) as e:
        DynamoSpace(settings, timeout_s=1.0, max_attempts=1).get_blob("j", "a")
    assert dead in str(e.value) and "faasgd-temp" in str(e.value) and "never+shown" not in str(e.value)
