"""The base every job configuration is built on: a frozen pydantic model, its field types, and one parse.

A field is declared with a type from here, a default and a one-line description:

    batch_size: Int(1, 65536) = Field(128, description="samples per minibatch, per worker")

Values come typed (JSON bodies, records) or as text (the environment, CLI flags); both go through the same
validation. Every problem is a ConfigError naming the field, what it must be and what was given, e.g.
`batch_size: must be an integer in [1, 65536], got 0`. Each source is parsed and checked on its own
(`environment_values`: the model's keys of the environment; `body_values`: a request body's or the flags'
keys); the caller layers them over the defaults: defaults < environment < body.
"""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any, Iterable, Literal, Mapping

import annotated_types
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic.fields import FieldInfo

from faasgd.errors import ConfigError
from faasgd.store.url import mask_urls

# Where stores are: set by the function's own configuration (environment, secrets), never by a request, so
# nothing a caller sends makes a function connect elsewhere or send a password away. A request names a store.
LOCATION_KEYS = ("store_url", "local_store_url")
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
_STORE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}\Z")


class ConfigModel(BaseModel):
    """A configuration: frozen, every field declared (an unknown key is an error naming it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **values: Any) -> None:
        """Built directly (`TrainConfig(batch_size=64)`): the same checks, and a ConfigError naming the field."""
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise config_error(type(self), error, values) from None


def refuse_bool(value: Any) -> Any:
    """Numbers are never true/false (JSON `true` is not 1); text is stripped (environment values)."""
    if isinstance(value, bool):
        raise ValueError("true or false is not a number")
    return value.strip() if isinstance(value, str) else value


def strip_text(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def Int(low: int, high: int) -> Any:
    """An integer in [low, high]; integral floats (64.0) and text ("64") are accepted."""
    return Annotated[int, BeforeValidator(refuse_bool), Field(ge=low, le=high)]


def Float(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Any:
    """A number between low and high, each end closed unless said open; text is accepted, NaN never."""
    bounds = Field(gt=low) if low_open else Field(ge=low), Field(lt=high) if high_open else Field(le=high)
    return Annotated[float, BeforeValidator(refuse_bool), *bounds]


def Choice(*allowed: str) -> Any:
    """One of `allowed` (surrounding spaces ignored)."""
    return Annotated[Literal[allowed], BeforeValidator(strip_text)]


def read_flag(value: Any, info: ValidationInfo) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE + FALSE:
        return value.strip().lower() in TRUE
    raise ConfigError(info.field_name, f"must be true or false, got {value!r}")


def read_store_name(value: Any, info: ValidationInfo) -> str:
    if not isinstance(value, str) or not (value == "" or _STORE_NAME.match(value.strip())):
        raise ConfigError(info.field_name, f"must be the name of a configured store (like redis or memcached), "
                                           f"got {mask_urls(repr(value))}")
    return value.strip()


Flag = Annotated[bool, BeforeValidator(read_flag)]
StoreName = Annotated[str, BeforeValidator(read_store_name)]


def rule(info: FieldInfo) -> str:
    """What a field's value must be: its declared `rule` (json_schema_extra), else read from its type:
    `an integer in [1, 65536]`, `one of a, b` ...; "" when neither says."""
    if isinstance(info.json_schema_extra, dict) and "rule" in info.json_schema_extra:
        return str(info.json_schema_extra["rule"])
    base, metadata = info.annotation, list(info.metadata)
    if typing.get_origin(base) is Literal:
        return "one of " + ", ".join(repr(v) if v == "" else v for v in typing.get_args(base))
    if base is bool:
        return "true or false"
    low = next((m for m in metadata if isinstance(m, (annotated_types.Ge, annotated_types.Gt))), None)
    high = next((m for m in metadata if isinstance(m, (annotated_types.Le, annotated_types.Lt))), None)
    if base in (int, float) and low is not None and high is not None:
        kind = "an integer" if base is int else "a number"
        left = f"({low.gt}" if isinstance(low, annotated_types.Gt) else f"[{low.ge}"
        right = f"{high.lt})" if isinstance(high, annotated_types.Lt) else f"{high.le}]"
        return f"{kind} in {left}, {right}"
    return ""  # a field with its own validator, which names what it takes in its errors


def config_error(model: type[ConfigModel], error: ValidationError, given: Mapping[str, Any]) -> ConfigError:
    """The ConfigError for the first failing key in `given`'s order: the validator's own, or one naming the
    field, the values it allows and the value given."""
    order = {key: i for i, key in enumerate(given)}
    first = min(error.errors(), key=lambda e: order.get(e["loc"][0] if e["loc"] else "", len(order)))
    field = str(first["loc"][0]) if first["loc"] else "body"
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigError):
        return cause
    if first["type"] == "extra_forbidden":
        return ConfigError(field, f"unknown key (known keys: {', '.join(model.model_fields)})")
    return ConfigError(field, f"must be {rule(model.model_fields[field]) or 'valid'}, got {given.get(field)!r}")


def validate(model: type[ConfigModel], values: Mapping[str, Any]) -> ConfigModel:
    """`values` as `model` (the other fields at their defaults); ConfigError naming the first bad key."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as error:
        raise config_error(model, error, values) from None


def parse_values(model: type[ConfigModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """Each of `values` parsed and checked as `model`'s field of that name (a source checked on its own)."""
    parsed = validate(model, values)
    return {key: getattr(parsed, key) for key in values}


def environment_values(model: type[ConfigModel], env: Mapping[str, str] | None) -> dict[str, Any]:
    """The model's keys set (non-empty) in `env`, parsed; the environment's other names are not ours."""
    if env is None:
        return {}
    return parse_values(model, {key: env[key] for key in model.model_fields
                                if key in env and str(env[key]).strip() != ""})


def body_values(model: type[ConfigModel], body: Mapping[str, Any]) -> dict[str, Any]:
    """A body's (or flags') keys, parsed; a key given as null keeps the lower source's value."""
    return parse_values(model, {key: value for key, value in body.items() if value is not None})


def require_object(body: Any) -> None:
    """ConfigError naming `body` unless it is a mapping: null, [], 0, "" never start a default job by accident."""
    if not isinstance(body, Mapping):
        raise ConfigError("body", f"must be a JSON object (or a form) of config keys, got {type(body).__name__}")


def check_body(body: Any, known: Iterable[str], renamed: Mapping[str, tuple[str, str]] | None = None) -> None:
    """A body is a mapping of known keys; ConfigError naming `body`, a renamed key (and its new name), or the
    first unknown key."""
    require_object(body)
    known = tuple(known)
    for key in body:
        if renamed and key in renamed:
            new, why = renamed[key]
            raise ConfigError(str(key), f"renamed to {new}: {why}")
        if key not in known:
            raise ConfigError(str(key), f"unknown key (known keys: {', '.join(known)})")


def refuse_locations(body: Mapping[str, Any], keys: Iterable[str], hint: str) -> None:
    """ConfigError naming the first store location in a request body: those come from the function only."""
    for key in keys:
        if key in body:
            raise ConfigError(key, "a store's location comes from the function's configuration, never from a "
                                   f"request; {hint}")


def default_text(value: Any) -> str:
    """A default as it is written in the environment or a flag: `100` for (100,), `""` for the empty text."""
    if isinstance(value, tuple):
        return ",".join(str(getattr(v, "name", v)) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return '""' if value == "" else str(value)


def describe(model: type[ConfigModel], keys: Iterable[str]) -> list[tuple[str, str, str]]:
    """(key, default as text, description) of each of `keys`."""
    fields = model.model_fields
    return [(key, default_text(fields[key].default), fields[key].description or "") for key in keys]
