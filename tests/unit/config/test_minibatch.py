"""global_batch_size beside the per-worker batch_size, and the note on rows a step far above one worker's."""

import pytest

import faasgd
from faasgd.config import TrainConfig, config_from_record, load_config, load_request
from faasgd.errors import ConfigError
from faasgd.minibatch import FAR_ABOVE, REFERENCE_ROWS, batch_note
from support.paths import ROOT


@pytest.mark.parametrize("workers, rows, each", [(1, 128, 128), (2, 128, 64), (4, 512, 128), (8, 128, 16)])
def test_the_global_batch_is_split_evenly_among_the_workers(workers, rows, each):
    config = load_config({}, {"global_batch_size": rows, "number_of_workers": workers})
    assert config.batch_size == each and config.batch_size * config.number_of_workers == rows
    assert config.global_batch_size == rows


def test_without_a_global_batch_the_batch_size_stays_per_worker():
    config = load_config({}, {"batch_size": 64, "number_of_workers": 4})
    assert (config.batch_size, config.global_batch_size) == (64, 0)
    assert load_config({}, {"batch_size": 64, "global_batch_size": 0}).batch_size == 64  # 0: not set


def test_single_mode_takes_the_whole_global_batch_in_its_one_worker():
    config = load_config({}, {"invocation_mode": "single", "number_of_workers": 4, "global_batch_size": 256})
    assert (config.number_of_workers, config.batch_size) == (1, 256)


def test_a_request_global_batch_replaces_the_environments_batch_size_and_the_other_way_round():
    stack_env = {"batch_size": "128", "number_of_workers": "2"}  # what stack.yml sets
    assert load_request(stack_env, {"global_batch_size": 128, "number_of_workers": 4}).batch_size == 32
    config = load_request({"global_batch_size": "512"}, {"batch_size": 16, "number_of_workers": 4})
    assert (config.batch_size, config.global_batch_size) == (16, 0)
    assert load_config({"global_batch_size": "512", "number_of_workers": "4"}, {}).batch_size == 128


@pytest.mark.parametrize("env, body, source", [
    ({}, {"batch_size": 64, "global_batch_size": 256}, "body"),
    ({"batch_size": "64", "global_batch_size": "256"}, {}, "environment"),
])
def test_both_batch_keys_in_one_place_are_refused_naming_both(env, body, source):
    with pytest.raises(ConfigError) as error:
        load_config(env, body)
    assert error.value.field == "global_batch_size"
    assert "batch_size 64" in str(error.value) and "global_batch_size 256" in str(error.value)
    assert source in str(error.value)


def test_a_global_batch_that_does_not_divide_is_refused_with_the_nearest_multiples():
    with pytest.raises(ConfigError) as error:
        load_config({}, {"global_batch_size": 130, "number_of_workers": 4})
    assert error.value.field == "global_batch_size"
    assert "number_of_workers 4" in str(error.value) and "128 or 132" in str(error.value)
    with pytest.raises(ConfigError, match="nearest: 4"):
        load_config({}, {"global_batch_size": 2, "number_of_workers": 4})  # fewer rows than workers


def test_a_global_batch_above_the_per_worker_bound_is_refused():
    with pytest.raises(ConfigError) as error:
        load_config({}, {"global_batch_size": 2 * 65536 + 2, "number_of_workers": 2})
    assert error.value.field == "global_batch_size" and "65537 rows each" in str(error.value)


def test_a_record_with_a_global_batch_rebuilds_the_same_config_and_a_tampered_one_is_refused():
    config = load_config({}, {"global_batch_size": 256, "number_of_workers": 4})
    record = config.to_dict()
    assert record["batch_size"] == 64 and record["global_batch_size"] == 256
    assert config_from_record(record) == config
    with pytest.raises(ConfigError) as error:
        config_from_record({**record, "batch_size": 128})
    assert error.value.field == "batch_size"
    assert config_from_record({k: v for k, v in record.items() if k != "global_batch_size"}) \
        == load_config({}, {"batch_size": 64, "number_of_workers": 4})  # a record from before the key


@pytest.mark.parametrize("workers, batch, noted", [
    (1, 128, False), (4, 32, False), (8, 16, False), (2, 128, False),  # at most 2 x 128 rows a step
    (3, 128, True), (4, 128, True), (8, 128, True), (1, 1024, True),  # above it, as the bound measured (docs/explanation/downpour.md)
])
def test_the_note_marks_rows_a_step_far_above_one_workers(workers, batch, noted):
    config = load_config({}, {"number_of_workers": workers, "batch_size": batch})
    note = batch_note(config)
    assert (note is not None) == noted == (workers * batch > FAR_ABOVE * REFERENCE_ROWS)
    if noted:
        assert "\n" not in note and f"{workers * batch:,} rows a step" in note
        assert f"global_batch_size {REFERENCE_ROWS}" in note and "docs/explanation/downpour.md" in note


def test_the_note_reads_a_record_and_stays_silent_where_the_measurement_does_not_reach():
    record = load_config({}, {"number_of_workers": 4, "batch_size": 128}).to_dict()
    assert batch_note(record) == faasgd.batch_note(load_config({}, {"number_of_workers": 4}))
    assert batch_note({**record, "model": "lr"}) is None  # convex models: not what was measured
    assert batch_note({"number_of_workers": 4}) is None  # a row without batch_size
    assert batch_note(TrainConfig()) is None  # the default: 2 x 128


def test_a_request_to_the_deployed_stack_splits_its_global_batch_over_stack_ymls_batch_size():

    import yaml

    stack = yaml.safe_load((ROOT / "stack.yml").read_text())
    env = {k: str(v) for k, v in stack["functions"]["emnist-setup"]["environment"].items()}
    assert load_request(env, {}).batch_size == 128 and load_request(env, {}).global_batch_size == 0
    config = load_request(env, {"global_batch_size": 256, "number_of_workers": 4})
    assert (config.batch_size, config.global_batch_size) == (64, 256)
