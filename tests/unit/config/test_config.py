import pytest

from faasgd.config import FIELDS, TrainConfig, config_from_record, load_config
from faasgd.errors import ConfigError


def test_defaults_without_env_or_overrides():
    config = load_config({}, {})
    assert config == TrainConfig()
    assert config.hidden_sizes == (100,)


def test_environment_overrides_defaults_and_body_overrides_environment():
    env = {"batch_size": "64", "learning_rate": "0.05", "hidden_sizes": "256, 128", "PATH": "/bin"}
    config = load_config(env, {"batch_size": 32})
    assert config.batch_size == 32
    assert config.learning_rate == pytest.approx(0.05)
    assert config.hidden_sizes == (256, 128)


def test_empty_environment_value_is_ignored():
    assert load_config({"batch_size": ""}, {}).batch_size == TrainConfig().batch_size


def test_unknown_body_key_is_rejected_by_name():
    with pytest.raises(ConfigError) as info:
        load_config({}, {"batchsize": 10})
    assert info.value.field == "batchsize"
    assert "unknown key" in str(info.value)


def test_body_must_be_an_object():
    with pytest.raises(ConfigError) as info:
        load_config({}, [1, 2])  # type: ignore[arg-type]
    assert info.value.field == "body"


@pytest.mark.parametrize(
    "field, value",
    [
        ("batch_size", 0),
        ("batch_size", "abc"),
        ("batch_size", True),
        ("batch_size", 1.5),
        ("global_batch_size", -1),
        ("global_batch_size", "many"),
        ("number_of_workers", 0),
        ("n_fetch", 0),
        ("n_push", -1),
        ("learning_rate", 0),
        ("learning_rate", -0.1),
        ("learning_rate", "fast"),
        ("dropout", 1.0),
        ("target_accuracy", 1.5),
        ("max_epochs", 0),
        ("dataset", "cifar10"),
        ("activation", "sigmoid"),
        ("invocation_mode", "batch"),
        ("update_rule", "mean"),
        ("communication", "async"),
        ("hidden_sizes", []),
        ("hidden_sizes", "10,x"),
        ("store_url", "postgres://127.0.0.1/0"),
        ("store_url", "127.0.0.1:6379"),
        ("store_url", ""),
        ("seed", -1),
        ("algorithm", "gossip"),
        ("sync", "allreduce"),
        ("model", "forest"),
        ("channel", "dynamodb"),
        ("local_steps", 0),
        ("admm_rho", 0),
        ("round_timeout_s", "never"),
        ("dataset", "libsvm:../x"),
    ],
)
def test_bad_values_name_the_field_and_the_value(field, value):
    with pytest.raises(ConfigError) as info:
        load_config({}, {field: value})
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert repr(value) in str(info.value)


def test_bad_environment_value_names_the_field():
    with pytest.raises(ConfigError) as info:
        load_config({"n_fetch": "zero"}, {})
    assert info.value.field == "n_fetch"


def test_integral_float_from_json_is_accepted():
    assert load_config({}, {"batch_size": 64.0}).batch_size == 64


def test_single_mode_runs_one_worker():
    assert load_config({}, {"invocation_mode": "single", "number_of_workers": 4}).number_of_workers == 1


def test_record_round_trip_is_exact():
    config = load_config({}, {"hidden_sizes": [32, 16], "invocation_mode": "per-iteration", "store_url": "memcached://h:1"})
    assert config_from_record(config.to_dict()) == config


def test_the_old_mode_key_is_refused_naming_invocation_mode_and_the_environments_mode_is_not_ours():
    with pytest.raises(ConfigError) as error:
        load_config({}, {"mode": "loop"})
    assert error.value.field == "mode" and "invocation_mode" in str(error.value)
    # the image sets mode=http for of-watchdog; the function process sees it and must ignore it
    assert load_config({"mode": "http", "invocation_mode": "per-iteration"}).invocation_mode == "per-iteration"


@pytest.mark.parametrize("workload", ["train", "stacking"])
def test_every_field_has_a_one_line_description_and_numbers_have_both_bounds(workload):
    from faasgd.config.base import rule
    from faasgd.stacking import config as stacking_config

    fields = FIELDS if workload == "train" else stacking_config.FIELDS
    for name, field in fields.items():
        assert field.description and "\n" not in field.description, name
        if field.annotation in (int, float):
            assert " in [" in rule(field) or " in (" in rule(field), name


def test_each_concern_is_its_own_model_and_attribute_access_stays_flat():
    from faasgd.config import groups as config_groups

    groups = [config_groups.DataSettings, config_groups.ModelSettings, config_groups.TrainingSettings,
              config_groups.CommunicationSettings, config_groups.InvocationSettings, config_groups.StoreSettings,
              config_groups.AlgorithmSettings, config_groups.StragglerSettings]
    owned = [name for group in groups for name in group.model_fields]
    assert sorted(owned) == sorted(FIELDS) == sorted(TrainConfig.model_fields)  # each key in exactly one group
    config = load_config({}, {"n_push": 7, "model": "lr", "algorithm": "grad_avg"})
    assert isinstance(config, config_groups.CommunicationSettings) and config.n_push == 7 and config.model == "lr"


def test_the_config_is_frozen_and_unknown_keys_are_refused_even_when_built_directly():
    config = TrainConfig()
    with pytest.raises(ValueError):
        config.batch_size = 3
    with pytest.raises(ConfigError) as info:
        TrainConfig(batchsize=3)
    assert info.value.field == "batchsize" and "unknown key" in str(info.value)
    with pytest.raises(ConfigError, match=r"^batch_size: must be an integer in \[1, 65536\], got 0$"):
        TrainConfig(batch_size=0)


@pytest.mark.parametrize("field, text", [("batch_size", "0"), ("dropout", "1"), ("activation", "sigmoid"),
                                         ("hidden_sizes", "10,x"), ("sync", "allreduce"), ("store", "Not A Name")])
def test_the_environment_the_body_and_the_flags_get_the_same_error(field, text, capsys):
    from faasgd.cli.main import main

    errors = []
    for env, body in (({field: text}, {}), ({}, {field: text})):
        with pytest.raises(ConfigError) as info:
            load_config(env, body)
        errors.append((info.value.field, str(info.value)))
    assert errors[0] == errors[1] and errors[0][0] == field and repr(text) in errors[0][1]
    assert main(["train", "--dry-run", "--" + field.replace("_", "-"), text]) == 2  # validated before anything starts
    assert capsys.readouterr().err.strip().endswith(errors[0][1])


def test_an_error_names_the_allowed_values():
    with pytest.raises(ConfigError, match=r"must be one of loop, per-iteration, single, got 'batch'"):
        load_config({}, {"invocation_mode": "batch"})
    with pytest.raises(ConfigError, match=r"must be a number in \(0.0, 100.0\], got True"):
        load_config({}, {"learning_rate": True})


def test_a_bad_environment_value_fails_even_when_the_body_overrides_it():
    with pytest.raises(ConfigError) as info:
        load_config({"n_fetch": "zero"}, {"n_fetch": 5})
    assert info.value.field == "n_fetch"


def test_the_first_bad_key_of_a_body_is_named():
    with pytest.raises(ConfigError) as info:
        load_config({}, {"seed": -1, "batch_size": 0})
    assert info.value.field == "seed"


def test_every_stacking_default_reads_back_as_the_default():
    from faasgd.stacking.config import StackingConfig, describe_fields, load_stacking

    env = {key: "" if text == '""' else text for key, text, _ in describe_fields()}
    assert env["models"] == "LinearSVR,Lasso,RandomForestRegressor,KNeighborsRegressor"
    assert load_stacking(env, {}) == StackingConfig()


def test_every_documented_default_reads_back_as_the_default():
    from faasgd.config import describe_fields

    described = describe_fields()
    assert [key for key, _, _ in described] == list(FIELDS)
    env = {key: "" if text == '""' else text for key, text, _ in described}
    assert load_config(env, {}) == TrainConfig()
    assert dict((key, text) for key, text, _ in described)["hidden_sizes"] == "100"
