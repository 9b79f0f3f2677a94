"""faas-cli's rules for a stack file, re-stated from its source so tests can check stack.yml offline.

Where faas-cli or faas-netes has an error message for a rule, the problem carries that message.
Sources read (openfaas/faas-cli c8191b7 of 2026-07-24, which vendors openfaas/go-sdk; openfaas/
faas-netes 662ce9c of 2026-05-13; openfaas/of-watchdog 9bdadb1):
  go-sdk stack/stack.go        ParseYAMLData: envsubst first, provider.name, version
  go-sdk stack/schema.go       the keys of a stack file, a function and a template.yml
  drone/envsubst funcs.go      ${VAR:-d}, ${VAR-d}, ${VAR=d}, ${VAR:=d} all mean "VAR if non-empty, else d"
  faas-cli builder/build.go    template/<lang>/template.yml, handler path, build_options
  go-sdk builder/builder.go    CreateBuildContext and pathInScope: where `configuration.copy` lands
  faas-cli commands/secret_create.go   secret names are DNS-1123 subdomains
  faas-netes pkg/handlers/validate.go  service names, image required, CE scaling labels (<= 5)
  of-watchdog config/config.go         timeouts: integer seconds or Go durations
Stricter than faas-cli on purpose: unknown keys (a typo silently drops a setting in faas-cli),
unknown environment keys, credentials in the environment, and version being required.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Mapping

import yaml

from faasgd.errors import ConfigError
from faasgd.local.replicas import stack as local_stack
from faasgd.tracing import setup as tracing_setup

PROVIDER_NAME = "openfaas"
VALID_VERSIONS = ["1.0"]
CE_MAX_REPLICAS = 5  # faas-netes pkg/handlers/replica_reader.go MaxReplicas

TOP_KEYS = {"version", "provider", "functions", "configuration"}
PROVIDER_KEYS = {"name", "gateway"}
CONFIGURATION_KEYS = {"templates", "copy"}
FUNCTION_KEYS = {
    "lang", "handler", "image", "fprocess", "environment", "secrets", "skip_build", "constraints",
    "environment_file", "labels", "limits", "requests", "readonly_root_filesystem", "build_options",
    "annotations", "namespace", "build_args", "platforms", "build_secrets",
}
RESOURCE_KEYS = {"memory", "cpu"}
TEMPLATE_KEYS = {"language", "fprocess", "build_options", "welcome_message", "handler_folder", "mount_ssh"}

# Environment keys that are not faasgd config keys: of-watchdog's, the template's, the handlers'.
RUNTIME_ENV_KEYS = {
    "read_timeout", "write_timeout", "exec_timeout", "upstream_timeout", "healthcheck_interval",
    "max_inflight", "prefix_logs", "log_callid", "gateway_url", "max_request_bytes", "waitress_threads",
    "suppress_lock", "ready_path", "stores", "memory_limit", "store_budget", "worker_slots",
    "store_topology", "local_store_url",
} | set(tracing_setup.ENV_NAMES)  # the template's index.py reads these (faasgd.tracing.setup)
DURATION_KEYS = ("read_timeout", "write_timeout", "exec_timeout", "healthcheck_interval")

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class StackError(ValueError):
    """Raised when a stack file cannot be read as faas-cli would (bad substitution or YAML)."""


class _GoStringLoader(yaml.SafeLoader):
    """YAML as faas-cli's structs see it: every scalar keeps its source text ("1.0", not 1.0)."""


_GoStringLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag == "tag:yaml.org,2002:merge"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def envsubst(text: str, env: Mapping[str, str]) -> str:
    """drone/envsubst as faas-cli runs it: the runtime's own implementation (faasgd.local.replicas.stack)."""
    try:
        return local_stack.envsubst(text, env)
    except ConfigError as exc:
        raise StackError(f"unsupported substitution: {exc}") from None


def load_stack(path: str | Path, env: Mapping[str, str] | None = None) -> dict:
    """The stack file after substitution, scalars as strings."""
    text = envsubst(Path(path).read_text(), os.environ if env is None else env)
    try:
        data = yaml.load(text, Loader=_GoStringLoader)
    except yaml.YAMLError as exc:
        raise StackError(f"Error with YAML file: {exc}") from None
    if not isinstance(data, dict):
        raise StackError("Error with YAML file: the top level must be a mapping")
    return data


def seconds(value: str) -> float | None:
    """An of-watchdog timeout in seconds: "30" or a Go duration ("1h30m"); None if neither."""
    if re.fullmatch(r"[0-9]+", value):
        return float(value)
    if not GO_DURATION.match(value):
        return None
    return sum(float(n) * _UNITS[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", value))


def check_stack(path: str | Path, config_keys: set[str], env: Mapping[str, str] | None = None) -> list[str]:
    """Every rule the stack file at `path` breaks, as messages; [] when faas-cli would accept it."""
    root = Path(os.path.abspath(path)).parent  # like Go's filepath.Abs: symlinks are not resolved
    try:
        stack = load_stack(path, env)
    except StackError as exc:
        return [str(exc)]
    problems = [f"unknown top-level key {k!r}" for k in stack if k not in TOP_KEYS]
    provider = stack.get("provider") or {}
    problems += [f"provider: unknown key {k!r}" for k in provider if k not in PROVIDER_KEYS]
    if provider.get("name") != PROVIDER_NAME:
        problems.append(f"['{PROVIDER_NAME}'] is the only valid \"provider.name\" for the OpenFaaS CLI, "
                        f"but you gave: {provider.get('name', '')}")
    if stack.get("version") not in VALID_VERSIONS:
        problems.append(f"[{' '.join(VALID_VERSIONS)}] are the only valid versions for the stack file - "
                        f"found: {stack.get('version', '')}")
    configuration = stack.get("configuration") or {}
    problems += [f"configuration: unknown key {k!r}" for k in configuration if k not in CONFIGURATION_KEYS]
    for extra in configuration.get("copy") or []:
        problems += _check_copy_path(root, extra)
    functions = stack.get("functions")
    if not isinstance(functions, dict) or not functions:
        return problems + ["functions: at least one function is required"]
    for name, function in functions.items():
        problems += [f"{name}: {p}" for p in _check_function(root, str(name), function or {}, config_keys)]
    return problems


def _check_copy_path(root: Path, extra: str) -> list[str]:
    """go-sdk builder.pathInScope, plus: the path must exist (copyFiles fails otherwise)."""
    target = Path(os.path.abspath(root / extra))
    if target == root:
        return [f"forbidden path appears to equal the entire project: {extra} ({target})"]
    if os.path.commonpath([root, target]) != str(root):
        return [f"forbidden path appears to be outside of the build context: {extra} ({target})"]
    if not target.exists():
        return [f"configuration.copy: {extra} does not exist"]
    return []


def _check_function(root: Path, name: str, function: dict, config_keys: set[str]) -> list[str]:
    problems = [f"unknown key {k!r}" for k in function if k not in FUNCTION_KEYS]
    if not DNS_LABEL.match(name) or len(name) > 63:
        problems.append(f"service: ({name}) is invalid, must be a valid DNS entry")
    if not function.get("image"):
        problems.append("image: is required")
    problems += _check_lang_and_handler(root, name, function)
    problems += _check_labels(function.get("labels") or {})
    problems += _check_environment(function.get("environment") or {}, config_keys)
    for secret in function.get("secrets") or []:
        if not DNS_SUBDOMAIN.match(secret):
            problems.append(f"ERROR: invalid secret name {secret}")
    for kind in ("limits", "requests"):
        problems += [f"{kind}: unknown key {k!r}" for k in function.get(kind) or {} if k not in RESOURCE_KEYS]
    return problems


def _check_lang_and_handler(root: Path, name: str, function: dict) -> list[str]:
    lang, handler = function.get("lang"), function.get("handler")
    problems = []
    if not lang:
        problems.append("Please provide a valid language for your function.")
    elif lang != "dockerfile":
        template_yml = root / "template" / lang / "template.yml"
        if not template_yml.is_file():
            problems.append(f"language template: {lang} not supported, build a custom Dockerfile, "
                            f"error: template {lang} not found")
        else:
            template = yaml.safe_load(template_yml.read_text()) or {}
            problems += [f"template.yml: unknown key {k!r}" for k in template if k not in TEMPLATE_KEYS]
            available = {option["name"] for option in template.get("build_options") or []}
            for option in function.get("build_options") or []:
                if option not in available:
                    problems.append(f"Error: You're using a build option unavailable for {lang}. "
                                    f"Please check /template/{lang}/template.yml for supported build options")
    if not handler:
        problems.append("please provide the full path to your function's handler")
    elif not (root / handler).is_dir():
        problems.append(f"building {name}, {handler} is an invalid path")
    elif lang and lang.startswith("python") and not (root / handler / "handler.py").is_file():
        problems.append(f"handler: {handler} has no handler.py")
    return problems


def _check_labels(labels: dict) -> list[str]:
    """faas-netes validateScalingLabels, plus what CE can honour: integers in [1, 5], min <= max."""
    problems = []
    if labels.get("com.openfaas.scale.zero") == "true":
        problems.append("com.openfaas.scale.zero not available for Community Edition")
    for key in ("zero-duration", "target", "type"):
        if f"com.openfaas.scale.{key}" in labels:
            problems.append(f"com.openfaas.scale.{key} not available for Community Edition")
    bounds = {}
    for key in ("min", "max"):
        value = labels.get(f"com.openfaas.scale.{key}")
        if value is None:
            continue
        if not re.fullmatch(r"[0-9]+", value):
            problems.append(f"com.openfaas.scale.{key} must be an integer, got {value!r}")
        elif int(value) > CE_MAX_REPLICAS:
            problems.append(f"com.openfaas.scale.{key} is set too high for Community Edition")
        elif int(value) < 1:
            problems.append(f"com.openfaas.scale.{key} must be at least 1 (CE keeps 1 replica), got {value}")
        else:
            bounds[key] = int(value)
    if bounds.get("min", 1) > bounds.get("max", CE_MAX_REPLICAS):
        problems.append(f"com.openfaas.scale.min ({bounds['min']}) is above com.openfaas.scale.max ({bounds['max']})")
    return problems


def _check_environment(environment: dict, config_keys: set[str]) -> list[str]:
    problems = []
    for key, value in environment.items():
        if key not in config_keys and key not in RUNTIME_ENV_KEYS:
            problems.append(f"environment: unknown key {key!r} (neither a faasgd config key nor a runtime key)")
        if "password" in key.lower() or "secret" in key.lower():
            problems.append(f"environment: {key!r} looks like a secret; use `secrets:` and a secret file")
        if not isinstance(value, str):
            problems.append(f"environment: {key} must be a scalar, got {type(value).__name__}")
        elif re.search(r"://[^/@\s]*:[^/@\s]*@", value):
            problems.append(f"environment: {key} carries credentials in a URL; use `secrets:` instead")
    timeouts = {key: seconds(environment[key]) for key in DURATION_KEYS if key in environment}
    problems += [f"environment: {key}={environment[key]!r} is neither integer seconds nor a Go duration"
                 for key, value in timeouts.items() if value is None]
    execute = timeouts.get("exec_timeout")
    for key in ("read_timeout", "write_timeout"):
        if execute is not None and timeouts.get(key) is not None and timeouts[key] < execute:
            problems.append(f"environment: {key} is shorter than exec_timeout: the watchdog would cut answers")
    return problems


def build_context(stack_path: str | Path, name: str, dest: str | Path, env: Mapping[str, str] | None = None) -> Path:
    """Lay out build/<name>/ as faas-cli build does (go-sdk builder.CreateBuildContext), into `dest`."""
    root = Path(os.path.abspath(stack_path)).parent
    stack = load_stack(stack_path, env)
    function = stack["functions"][name]
    context = Path(dest) / name
    shutil.copytree(root / "template" / function["lang"], context)
    handler_dst = context / "function"
    handler_dst.mkdir(exist_ok=True)
    for entry in (root / function["handler"]).iterdir():
        if entry.name in ("build", "template"):
            continue
        _copy(entry, handler_dst / entry.name)
    for extra in (stack.get("configuration") or {}).get("copy") or []:
        _copy(root / extra, handler_dst / extra)
    return context


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
