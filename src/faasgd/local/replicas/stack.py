"""Reading stack.yml as faas-cli does: ${VAR:-default} substitution, then the functions we run.

Read: each function's template (lang), handler folder, image, environment (`environment`, then each
`environment_file` in order, as `faas-cli deploy` merges them), secrets, labels, annotations,
constraints, limits, requests and readonly_root_filesystem: what `faas-cli deploy -f` would send.
tests/support/stack_rules.py checks the full faas-cli rules. Departure: faas-cli reads environment files
relative to its working directory; here they are relative to the stack file (`faasgd up -f` may
name a stack elsewhere), which is the same when run from the stack's folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from faasgd.errors import ConfigError
from faasgd.local.api import CE_MAX_REPLICAS, MAX_LABEL, MIN_LABEL

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
    annotations: dict[str, str] = field(default_factory=dict)
    constraints: tuple[str, ...] = ()  # recorded and shown; CE ignores them (no nodeSelector since 2024)
    limits: dict[str, str] = field(default_factory=dict)  # {"memory": "1Gi", "cpu": "1"}: shown, not enforced
    requests: dict[str, str] = field(default_factory=dict)
    read_only_root_filesystem: bool = False
    env_process: str = ""  # fprocess as deployed (the template's); replicas always run its index.py
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
    labels = _strings(spec.get("labels"))
    low = _replicas(name, MIN_LABEL, labels.get(MIN_LABEL, "1"))
    high = _replicas(name, MAX_LABEL, labels.get(MAX_LABEL, str(CE_MAX_REPLICAS)))
    if low > high:
        raise ConfigError(f"functions.{name}.labels", f"{MIN_LABEL}={low} is above {MAX_LABEL}={high}")
    return FunctionSpec(
        name=name,
        lang=str(spec["lang"]),
        handler=(root / str(spec["handler"])).resolve(),
        image=str(spec["image"]),
        environment={**_strings(spec.get("environment")), **_environment_files(name, spec, root)},
        secrets=tuple(str(s) for s in spec.get("secrets") or ()),
        labels=labels,
        annotations=_strings(spec.get("annotations")),
        constraints=tuple(str(c) for c in spec.get("constraints") or ()),
        limits=_strings(spec.get("limits")),
        requests=_strings(spec.get("requests")),
        read_only_root_filesystem=bool(spec.get("readonly_root_filesystem")),
        min_replicas=low,
        max_replicas=high,
    )


def _strings(mapping) -> dict[str, str]:
    """A YAML map with its values as the strings faas-cli sends (a null value is "")."""
    return {str(k): "" if v is None else str(v) for k, v in (mapping or {}).items()}


def _environment_files(name: str, spec: dict, root: Path) -> dict[str, str]:
    """The `environment:` maps of the function's environment files, later files overriding earlier."""
    merged = {}
    for file in spec.get("environment_file") or ():
        path = root / str(file)
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"functions.{name}.environment_file", f"cannot read {path}: {error}") from None
        if not isinstance(document, dict) or not isinstance(document.get("environment") or {}, dict):
            raise ConfigError(f"functions.{name}.environment_file", f"{path} must hold an `environment:` map")
        merged.update(_strings(document.get("environment")))
    return merged


def _replicas(name: str, label: str, value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 1 <= count <= CE_MAX_REPLICAS:
        raise ConfigError(f"functions.{name}.labels.{label}",
                          f"must be an integer in [1, {CE_MAX_REPLICAS}] (Community Edition), got {value!r}")
    return count
