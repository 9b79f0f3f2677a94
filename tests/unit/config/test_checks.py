"""faasgd.checks, the one check of a number given as a setting or an argument: bools are refused, numpy's numbers only
where asked, bounds are inclusive, and the message names the field, what it must be and the value's repr alone."""

import math

import numpy as np
import pytest

from faasgd.checks import is_real, is_whole, positive_number, real_number, whole_number
from faasgd.errors import ConfigError


class Custom(ConfigError):
    pass


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, "1", None, [1], np.int64(1)])
def test_a_whole_number_is_an_int_never_a_bool_float_string_or_numpy_unless_asked(value):
    with pytest.raises(ConfigError) as raised:
        whole_number(value, "n")
    assert raised.value.field == "n" and str(raised.value) == f"n: must be an integer, got {value!r}"


@pytest.mark.parametrize("value", [np.int64(7), np.int32(7), np.uint8(7), 7])
def test_numpy_integers_are_whole_numbers_when_asked_and_come_back_as_a_plain_int(value):
    back = whole_number(value, "k", numpy=True)
    assert back == 7 and type(back) is int
    assert is_whole(value, numpy=True) and is_whole(value) == (type(value) is int)


def test_numpy_bools_are_refused_even_when_numpy_numbers_are_asked():
    assert not is_whole(np.bool_(True), numpy=True) and not is_real(np.bool_(False), numpy=True)
    with pytest.raises(ConfigError):
        whole_number(np.bool_(True), "k", numpy=True)


@pytest.mark.parametrize("low, high, inside, outside, must", [
    (0, None, [0, 1, 10**30], [-1], "an integer >= 0"),
    (1, None, [1, 2], [0, -5], "an integer >= 1"),
    (None, 3, [-9, 3], [4], "an integer <= 3"),
    (0, 255, [0, 128, 255], [-1, 256], "an integer in [0, 255]"),
])
def test_bounds_are_inclusive_and_the_default_message_says_them(low, high, inside, outside, must):
    for value in inside:
        assert whole_number(value, "x", low=low, high=high) == value
    for value in outside:
        with pytest.raises(ConfigError) as raised:
            whole_number(value, "x", low=low, high=high)
        assert str(raised.value) == f"x: must be {must}, got {value}"


def test_the_message_says_what_the_caller_says_it_must_be_and_the_error_is_the_callers():
    with pytest.raises(Custom) as raised:
        whole_number(70000, "--port", low=0, high=65535, must="an integer in [0, 65535] (0: a free port)",
                     error=Custom)
    assert str(raised.value) == "--port: must be an integer in [0, 65535] (0: a free port), got 70000"


def test_the_message_shows_the_value_by_its_repr_and_nothing_more_of_it():
    class Loud:
        def __repr__(self):
            return "<loud>"

        def __str__(self):
            return "secret-str"

    for check in (whole_number, positive_number, real_number):
        with pytest.raises(ConfigError) as raised:
            check(Loud(), "field")
        text = str(raised.value)
        assert text.startswith("field: must be ") and text.endswith(", got <loud>") and "secret-str" not in text
    with pytest.raises(ConfigError, match=r"^s: must be an integer, got 'a\\nb'$"):
        whole_number("a\nb", "s")


@pytest.mark.parametrize("value", [0, -1, 0.0, math.nan, math.inf, -math.inf, True, "1", None, 10**400])
def test_a_positive_number_is_finite_above_zero_and_never_a_bool(value):
    with pytest.raises(ConfigError) as raised:
        positive_number(value, "lr")
    assert str(raised.value) == f"lr: must be a positive number, got {value!r}"


def test_a_positive_number_comes_back_as_a_float_numpy_floats_only_when_asked():
    assert positive_number(3, "lr") == 3.0 and type(positive_number(3, "lr")) is float
    assert positive_number(np.float64(0.5), "lr") == 0.5  # a float subclass
    with pytest.raises(ConfigError):
        positive_number(np.float32(0.5), "lr")
    assert positive_number(np.float32(0.5), "lr", numpy=True) == 0.5
    assert positive_number(np.int64(2), "lr", numpy=True) == 2.0


@pytest.mark.parametrize("value, ok", [(0, True), (2.5, True), (-0.1, False), (math.nan, False), (math.inf, False),
                                       (False, False), (10**400, False)])
def test_a_real_number_is_finite_and_at_least_its_low_bound(value, ok):
    if ok:
        assert real_number(value, "eps", low=0) == value
    else:
        with pytest.raises(ConfigError, match=r"^eps: must be a finite number >= 0, got "):
            real_number(value, "eps", low=0)


def test_a_real_number_without_a_bound_is_any_finite_number():
    assert real_number(-1e300, "t") == -1e300
    with pytest.raises(ConfigError, match=r"^t: must be a finite number, got nan$"):
        real_number(math.nan, "t")
