"""The one check of a number given as a setting or an argument: a whole number (never a bool) within bounds, or a
finite real number. Used where a typed model does not parse the value; any layer may import it (the standard
library and faasgd.errors alone).

    port = whole_number(port, "--port", low=0, high=65535, must="an integer in [0, 65535] (0: a free port)")
    lr = positive_number(lr, "lr")

Each raises `error(field, f"must be {must}, got {value!r}")` (ConfigError unless told): the field named, what it
must be, and the value's repr, nothing more. `must` defaults to the bounds ("an integer >= 1", "an integer in
[0, 255]", "a positive number", "a finite number >= 0"). Numpy's integers and floats are accepted with
`numpy=True` (they register as numbers.Integral and numbers.Real; numpy's bool does not); the value is returned as
a plain int or float.
"""

from __future__ import annotations

import math
import numbers

from faasgd.errors import ConfigError


def is_whole(value: object, *, numpy: bool = False) -> bool:
    """True for an int (with `numpy`, any numbers.Integral: numpy's integers too); never for a bool."""
    return not (isinstance(value, bool) or not isinstance(value, numbers.Integral if numpy else int))


def is_real(value: object, *, numpy: bool = False) -> bool:
    """True for an int or a float (with `numpy`, any numbers.Real: numpy's numbers too); never for a bool."""
    return not (isinstance(value, bool) or not isinstance(value, numbers.Real if numpy else (int, float)))


def whole_number(value: object, field: str, *, low: int | None = None, high: int | None = None,
                 must: str | None = None, numpy: bool = False, error: type[ConfigError] = ConfigError) -> int:
    """Return `value` as an int if it is a whole number in [low, high] (either bound optional), else raise `error`
    naming `field`: it must be `must` (default: "an integer", with the bounds)."""
    if not is_whole(value, numpy=numpy) or (low is not None and value < low) or (high is not None and value > high):
        raise error(field, f"must be {must or _whole_bounds(low, high)}, got {value!r}")
    return int(value)


def positive_number(value: object, field: str, *, must: str = "a positive number", numpy: bool = False,
                    error: type[ConfigError] = ConfigError) -> float:
    """Return `value` as a float if it is a number > 0 and finite, else raise `error` naming `field`."""
    number = _as_float(value) if is_real(value, numpy=numpy) else math.nan
    if not 0 < number < math.inf:  # NaN fails too
        raise error(field, f"must be {must}, got {value!r}")
    return number


def real_number(value: object, field: str, *, low: float | None = None, must: str | None = None,
                numpy: bool = False, error: type[ConfigError] = ConfigError) -> float:
    """Return `value` as a float if it is a finite number >= `low` (if given), else raise `error` naming `field`."""
    number = _as_float(value) if is_real(value, numpy=numpy) else math.nan
    if not -math.inf < number < math.inf or (low is not None and number < low):
        raise error(field, f"must be {must or 'a finite number' + ('' if low is None else f' >= {low}')}, "
                           f"got {value!r}")
    return number


def _as_float(value) -> float:
    try:
        return float(value)
    except OverflowError:  # an int past float's range is not finite here
        return math.inf if value > 0 else -math.inf


def _whole_bounds(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"an integer in [{low}, {high}]"
    if low is not None:
        return f"an integer >= {low}"
    return "an integer" if high is None else f"an integer <= {high}"
