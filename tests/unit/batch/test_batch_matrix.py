"""Matrix files for test.sh: expansion, `together`, and errors that name the key."""

import pytest

from faasgd.batch import matrix as matrix_module
from faasgd.batch.matrix import MatrixError, load_matrix, parse_matrix
from faasgd.config import load_request
from support.paths import ROOT


def test_crossing_and_together():
    matrix = parse_matrix({
        "fixed": {"dataset": "synthetic"},
        "matrix": {"number_of_workers": [1, 2, 4], "n_fetch": [1, 10], "n_push": [1, 10], "store": "redis"},
        "together": [["n_fetch", "n_push"]],
        "rounds": 2,
    })
    assert matrix.rounds == 2 and len(matrix.configurations) == 6
    combos = {(c.values["number_of_workers"], c.values["n_fetch"], c.values["n_push"]) for c in matrix.configurations}
    assert combos == {(w, p, p) for w in (1, 2, 4) for p in (1, 10)}
    first = matrix.configurations[0]
    assert set(first.varying) == {"number_of_workers", "n_fetch", "n_push"}  # store has one value: not varying
    assert first.store == "redis" and first.overrides()["store"] == "redis"  # a config key like any other
    assert first.label == "number_of_workers=1 n_fetch=1 n_push=1"


def test_update_rule_is_an_axis_like_any_config_key():
    matrix = parse_matrix({"fixed": {"dataset": "synthetic"}, "matrix": {"update_rule": ["sum", "average", "adagrad"]}})
    assert [c.overrides()["update_rule"] for c in matrix.configurations] == ["sum", "average", "adagrad"]


def test_every_example_matrix_is_valid():
    for path in sorted((ROOT / "bench/matrix").glob("*.yml")):
        assert load_matrix(path).configurations, path


@pytest.mark.parametrize("document, field", [
    ({"matrix": {"workers": [1, 2]}}, "matrix.workers"),
    ({"fixed": {"batchsize": 3}}, "fixed.batchsize"),
    ({"colour": "red"}, "colour"),
    ({"matrix": {"batch_size": [32, 0]}}, "batch_size"),
    ({"matrix": {"store": ["redis", "postgres://x"]}}, "store"),
    ({"fixed": {"store_url": "redis://h:1/0"}}, "store_url"),  # a location never goes to the functions
    ({"matrix": {"n_fetch": [1, 10], "n_push": [1]}, "together": [["n_fetch", "n_push"]]}, "together"),
    ({"matrix": {"n_fetch": [1]}, "together": [["n_push"]]}, "together"),
    ({"matrix": {"invocation_mode": []}}, "matrix.invocation_mode"),
    ({"rounds": 0}, "rounds"),
    ({"matrix": {"update_rule": ["sum", "mean"]}}, "update_rule"),
    ({"matrix": {"communication": ["background", "async"]}}, "communication"),
    ({"fixed": {"seed": 1}, "matrix": {"seed": [1, 2]}}, "matrix.seed"),
])
def test_bad_matrices_name_the_key(document, field):
    with pytest.raises(MatrixError) as info:
        parse_matrix(document)
    assert info.value.field == field


def test_a_bad_value_names_its_configuration():
    with pytest.raises(MatrixError) as info:
        parse_matrix({"matrix": {"batch_size": [32, 0], "number_of_workers": 2}})
    assert "batch_size=0" in str(info.value)


# --- names, the run cap, rounds ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../evil", "a/b", "a\\b", "..", ".hidden", "a..b", "x" * 65, "a b", "é", ["a"]])
def test_a_name_that_is_not_a_plain_name_is_refused(name):
    with pytest.raises(MatrixError) as info:
        parse_matrix({"name": name})
    assert info.value.field == "name" and repr(name) in str(info.value)


def test_a_file_name_used_as_the_name_is_checked_too(tmp_path):
    path = tmp_path / "my batch.yml"
    path.write_text("rounds: 1\n")
    with pytest.raises(MatrixError, match="name: .*set `name:` in the matrix file.*'my batch'"):
        load_matrix(path)


@pytest.mark.parametrize("name", ["small", "workers-period", "run_2.v3", "x" * 64, 2024])
def test_plain_names_pass(name):
    assert parse_matrix({"name": name}).name == str(name)


def test_the_run_cap_is_computed_from_the_axes_before_any_configuration_is_built(monkeypatch):
    def build(configuration):  # called once per configuration built: none may be, or this would run for hours
        raise AssertionError(f"configuration {configuration.config_id} built before the cap was checked")

    monkeypatch.setattr(matrix_module, "_check", build)
    huge = {"matrix": {key: list(range(1, 11)) for key in ("batch_size", "n_fetch", "n_push", "max_epochs", "seed",
                                                           "lease_s", "train_samples", "test_samples",
                                                           "number_of_workers", "hidden_sizes")}}
    with pytest.raises(MatrixError) as info:
        parse_matrix(huge)
    assert info.value.field == "runs" and "10000000000 runs" in str(info.value) and "cap of 1000" in str(info.value)


def test_the_cap_counts_rounds_and_together_groups_once():
    document = {"matrix": {"number_of_workers": [1, 2, 4], "n_fetch": [1, 10], "n_push": [1, 10]},
                "together": [["n_fetch", "n_push"]], "rounds": 3}
    assert len(parse_matrix(document, max_runs=18).configurations) == 6  # 6 x 3 = 18: at the cap
    with pytest.raises(MatrixError, match=r"24 runs \(6 configuration\(s\) x 4 round\(s\)\), more than the cap of 18"):
        parse_matrix(document, rounds=4, max_runs=18)
    with pytest.raises(MatrixError) as info:
        parse_matrix(document, max_runs=0)
    assert info.value.field == "max_runs"


@pytest.mark.parametrize("rounds", [0, -1, 1001, True, "2"])
def test_rounds_given_outside_the_file_are_checked(rounds):
    with pytest.raises(MatrixError) as info:
        parse_matrix({"rounds": 2}, rounds=rounds)
    assert info.value.field == "rounds"


def test_rounds_given_override_the_file():
    assert parse_matrix({"rounds": 2}, rounds=5).rounds == 5 and parse_matrix({"rounds": 2}).rounds == 2


def test_a_yaml_error_is_one_line(tmp_path):
    path = tmp_path / "broken.yml"
    path.write_text("matrix: {batch_size: [1, 2}\nname: x\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert info.value.field == "matrix" and "\n" not in str(info.value) and "line" in str(info.value)


def test_a_global_batch_holds_the_rows_a_step_while_the_workers_vary():
    matrix = parse_matrix({"fixed": {"dataset": "synthetic", "global_batch_size": 128},
                           "matrix": {"number_of_workers": [1, 2, 4]}})
    split = [load_request({}, c.overrides()) for c in matrix.configurations]
    assert [(c.number_of_workers, c.batch_size) for c in split] == [(1, 128), (2, 64), (4, 32)]
    assert matrix.configurations[2].label == "number_of_workers=4"


@pytest.mark.parametrize("document", [
    {"fixed": {"batch_size": 32}, "matrix": {"global_batch_size": [128, 256]}},
    {"matrix": {"batch_size": [32], "global_batch_size": [128]}},
])
def test_a_matrix_with_both_batch_keys_is_refused_naming_both(document):
    with pytest.raises(MatrixError) as error:
        parse_matrix(document)
    assert error.value.field == "global_batch_size" and "batch_size (rows per worker)" in str(error.value)


def test_a_global_batch_a_worker_count_does_not_divide_names_the_configuration():
    with pytest.raises(MatrixError) as error:
        parse_matrix({"fixed": {"global_batch_size": 128}, "matrix": {"number_of_workers": [1, 3]}})
    assert error.value.field == "global_batch_size"
    assert "number_of_workers=3" in str(error.value) and "126 or 129" in str(error.value)
