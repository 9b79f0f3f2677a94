"""Matrix files for test.sh: expansion, `together`, and errors that name the key."""

import pytest

from faasgd.batch.matrix import MatrixError, load_matrix, parse_matrix

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


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
    assert first.store == "redis" and "store" not in first.overrides()
    assert first.label == "number_of_workers=1 n_fetch=1 n_push=1"


def test_every_example_matrix_is_valid():
    for path in sorted((ROOT / "bench/matrix").glob("*.yml")):
        assert load_matrix(path).configurations, path


@pytest.mark.parametrize("document, field", [
    ({"matrix": {"workers": [1, 2]}}, "matrix.workers"),
    ({"fixed": {"batchsize": 3}}, "fixed.batchsize"),
    ({"colour": "red"}, "colour"),
    ({"matrix": {"batch_size": [32, 0]}}, "batch_size"),
    ({"matrix": {"store": ["redis", "postgres://x"]}}, "store"),
    ({"matrix": {"n_fetch": [1, 10], "n_push": [1]}, "together": [["n_fetch", "n_push"]]}, "together"),
    ({"matrix": {"n_fetch": [1]}, "together": [["n_push"]]}, "together"),
    ({"matrix": {"invocation_mode": []}}, "matrix.invocation_mode"),
    ({"rounds": 0}, "rounds"),
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
