"""Update rules (sum | average | adagrad) end to end in process: the config key, the job's weight meta, the
store budget, the node-local cache, and one worker per rule against the single-process oracle.
The store contract (support/store_contract.py) checks each rule on every backend."""

import json
import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.config import config_from_record, load_config
from faasgd.errors import ConfigError
from faasgd.functions.admission import TooLarge, check_job
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import UpdateRule, codec, open_store
from faasgd.store.node_local import NodeLocalStore
from faasgd.store.update_rule import ADAGRAD_G0
from support import rule_oracle

RULES = ["sum", "average", "adagrad"]


def memory_url() -> str:
    return f"memory://rules-{uuid.uuid4().hex[:8]}"


def test_the_key_is_parsed_like_the_others_and_kept_in_the_record():
    assert load_config({}, {}).update_rule == "average"
    assert load_config({"update_rule": "sum"}, {}).update_rule == "sum"
    config = load_config({"update_rule": "sum"}, {"update_rule": " adagrad "})
    assert config.update_rule == "adagrad" and config_from_record(config.to_dict()) == config
    for bad in ("mean", "SUM", "", 3, ["sum"]):
        with pytest.raises(ConfigError) as e:
            load_config({}, {"update_rule": bad})
        assert e.value.field == "update_rule" and "sum, average, adagrad" in str(e.value)


def test_a_job_records_its_rule_with_its_weights():
    store = open_store(memory_url())
    config = rule_oracle.small_config(store.url, "adagrad", number_of_workers=3, learning_rate=0.05)
    job_id = job.create_job(store, config)
    meta = open_store(store.url)._weights_meta(job_id)  # as another client reads it
    assert meta.rule == UpdateRule("adagrad", workers=3, learning_rate=0.05)
    assert meta.chunk_floats == store.chunk_floats // 2  # [w | G] per stored chunk
    assert job.read_status(store, job_id)["config"]["update_rule"] == "adagrad"


def test_a_meta_written_before_rules_reads_as_sum_and_a_bad_rule_is_unreadable():
    old = json.dumps({"length": 10, "chunk_floats": 4, "writers": 1, "dtype": "<f4"}).encode()
    assert codec.meta_from_bytes(old).rule == UpdateRule("sum")
    meta = codec.WeightsMeta(10, 4, 1, UpdateRule("average", workers=4))
    assert codec.meta_from_bytes(codec.meta_to_bytes(meta)) == meta
    for rule in ({"name": "median"}, {"name": "adagrad", "learning_rate": 0}, "sum"):
        bad = json.dumps({"length": 10, "chunk_floats": 4, "dtype": "<f4", "rule": rule}).encode()
        with pytest.raises(ValueError):
            codec.meta_from_bytes(bad)


def test_adagrad_counts_its_state_in_the_store_budget():
    env = {"store_budget": "48Mi"}
    sizes = {"dataset": "synthetic", "hidden_sizes": "2000,2000", "number_of_workers": 1}  # ~5.6 M parameters
    needs = check_job(load_config({}, {**sizes, "update_rule": "average"}), env, "redis")
    assert needs["store_bytes"] == 2 * 4 * needs["params"]  # the weights and the job's kept model
    with pytest.raises(TooLarge) as e:
        check_job(load_config({}, {**sizes, "update_rule": "adagrad"}), env, "redis")
    assert e.value.field == "hidden_sizes" and "store_budget=48Mi" in str(e.value)


def test_a_node_local_cache_of_an_adagrad_job_holds_the_weights_only():
    global_store = open_store(memory_url(), chunk_floats=8)
    rule = UpdateRule("adagrad", learning_rate=0.1)
    global_store.set_weights("j1", np.arange(21, dtype=np.float32), writers=0, rule=rule)
    view = NodeLocalStore(global_store, memory_url(), refresh_s=3600)
    try:
        view.get_weights("j1")  # seeds the cache
        view.push_update("j1", np.full(21, -0.1, np.float32))  # g = 1 everywhere: adagrad moves w by -lr / sqrt(G0 + 1)
        assert view.refresh("j1") is True
        cached, version = view.get_weights("j1")
        np.testing.assert_allclose(cached, np.arange(21) - 0.1 / np.sqrt(ADAGRAD_G0 + 1), rtol=1e-6)
        assert version == 1
        assert view.local._weights_meta("j1").rule == UpdateRule()  # a plain copy: nobody pushes to it
        np.testing.assert_array_equal(cached, global_store.get_weights("j1")[0])
    finally:
        view.close()


@pytest.mark.parametrize("period", [1, 3])
@pytest.mark.parametrize("rule", RULES)
def test_one_worker_under_each_rule_equals_the_single_process_oracle(rule, period):
    config = rule_oracle.small_config(memory_url(), rule, period)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    final = run_worker(Call(config, store, job_id, 0))
    weights, version = store.get_weights(job_id)
    assert final["epoch"] == config.max_epochs and version == final["pushes"]
    rule_oracle.assert_matches(config, weights, rule_oracle.one_worker(config, final["epoch"]))


@pytest.mark.parametrize("rule", [UpdateRule("sum"), UpdateRule("average", workers=3),
                                  UpdateRule("adagrad", learning_rate=0.05)], ids=lambda r: f"{r.name}-{r.workers}")
def test_a_push_added_into_the_callers_buffer_is_bit_for_bit_the_rules_new_chunk(rule):
    rng = np.random.default_rng(3)
    meta = codec.WeightsMeta(2_500, 1_000, 1, rule)
    stored = [codec.encode_chunks(rng.standard_normal(2_500).astype(np.float32), meta)[i] for i in range(3)]
    delta = (rng.standard_normal(2_500) * 1e-3).astype(np.float32)
    out = np.full(2_500, np.nan, np.float32)
    wire = [codec.add_into(raw, delta, meta, i, out) for i, raw in enumerate(stored)]
    for i, raw in enumerate(stored):
        expected = codec.add_to_chunk(raw, delta, meta, i)  # the rule's new array, as bytes
        assert bytes(wire[i]) == expected
    np.testing.assert_array_equal(out, codec.decode_into([bytes(w) for w in wire], meta, np.empty(2_500, np.float32)))
    if rule.width == 1:  # the bytes sent are the caller's buffer itself
        assert np.shares_memory(np.frombuffer(wire[1], np.float32), out)
