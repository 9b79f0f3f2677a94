"""Reading stack.yml as faas-cli does: ${VAR:-default} substitution, then the functions we run.

Only what the local runtime needs is read: each function's template (lang), handler folder,
image, environment, secrets and scale labels. tests/stack_rules.py checks the full faas-cli rules.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from faasgd.errors import ConfigError

CE_MAX_REPLICAS = 5  # OpenFaaS Community Edition's cap on a function's replicas
MIN_LABEL = "com.openfaas.scale.min"
MAX_LABEL = "com.openfaas.scale.max"
_SUBST = re.compile(r"\$\$|\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_DEFAULT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:(:-|-|:=|=)(.*))?$", re.S)


@dataclass(frozen=True)
class FunctionSpec:
    """One function of the stack, as the local runtime runs it."""

    name: str  # DNS-label function name, e.g. emnist-train
    lang: str  # template folder under template/
    handler: Path  # the handler folder (absolute)
    image: str  # shown by /system/functions; nothing is pulled locally
    environment: dict[str, str] = field(default_factory=dict)  # the function's env, values as strings
    secrets: tuple[str, ...] = ()  # files the function reads from its secrets folder
    labels: dict[str, str] = field(default_factory=dict)
    min_replicas: int = 1  # com.openfaas.scale.min: also the replica count at start
    max_replicas: int = CE_MAX_REPLICAS  # com.openfaas.scale.max, never above CE's 5


def envsubst(text: str, env: Mapping[str, str]) -> str:
    """drone/envsubst as faas-cli applies it: $VAR, ${VAR}, ${VAR:-default} (also -, :=, =); $$ is $.

    Every default form means "VAR if set and non-empty, else default" in drone/envsubst.
    """

    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group(2):
            return env.get(match.group(2), "")
        parsed = _DEFAULT.match(match.group(1))
        if not parsed:
            raise ConfigError("stack", f"unsupported substitution ${{{match.group(1)}}}")
        name, operator, default = parsed.groups()
        value = env.get(name, "")
        return value if value or operator is None else default

    return _SUBST.sub(substitute, text)


def load_stack(path: str | os.PathLike, env: Mapping[str, str] | None = None) -> dict[str, FunctionSpec]:
    """The functions of a stack file, in file order; ConfigError naming what is wrong."""
    path = Path(path).resolve()
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError("stack", f"cannot read {path}: {error.strerror}") from None
    try:
        document = yaml.safe_load(envsubst(text, os.environ if env is None else env)) or {}
    except yaml.YAMLError as error:
        raise ConfigError("stack", f"{path} is not valid YAML: {error}") from None
    provider = (document.get("provider") or {}).get("name")
    if provider != "openfaas":
        raise ConfigError("provider.name", f"['openfaas'] is the only valid value, got {provider!r}")
    functions = document.get("functions") or {}
    if not isinstance(functions, dict) or not functions:
        raise ConfigError("functions", f"{path} defines no functions")
    return {name: _function(name, spec or {}, path.parent) for name, spec in functions.items()}


def _function(name: str, spec: dict, root: Path) -> FunctionSpec:
    for key in ("lang", "handler", "image"):
        if not spec.get(key):
            raise ConfigError(f"functions.{name}.{key}", "is required")
    labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    low = _replicas(name, MIN_LABEL, labels.get(MIN_LABEL, "1"))
    high = _replicas(name, MAX_LABEL, labels.get(MAX_LABEL, str(CE_MAX_REPLICAS)))
    if low > high:
        raise ConfigError(f"functions.{name}.labels", f"{MIN_LABEL}={low} is above {MAX_LABEL}={high}")
    return FunctionSpec(
        name=name,
        lang=str(spec["lang"]),
        handler=(root / str(spec["handler"])).resolve(),
        image=str(spec["image"]),
        environment={str(k): "" if v is None else str(v) for k, v in (spec.get("environment") or {}).items()},
        secrets=tuple(str(s) for s in spec.get("secrets") or ()),
        labels=labels,
        min_replicas=low,
        max_replicas=high,
    )


def _replicas(name: str, label: str, value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 1 <= count <= CE_MAX_REPLICAS:
        raise ConfigError(f"functions.{name}.labels.{label}",
                          f"must be an integer in [1, {CE_MAX_REPLICAS}] (Community Edition), got {value!r}")
    return count
