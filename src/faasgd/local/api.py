"""OpenFaaS's provider API as the local runtime reads it: a FunctionDeployment (what `faas-cli deploy`
sends to /system/functions), the scale range of a function, and the refusals the runtime answers.

Field names, messages and statuses follow faas-netes (`pkg/handlers/deploy.go`, `validate.go`) and
the faas-provider types. Where this departs from OpenFaaS CE, and why:
* Unknown fields in a body are refused with a 400 naming them (Go's decoder drops them silently):
  a misspelt field would otherwise deploy something other than what was asked. The spec's two deprecated
  fields, `network` (Swarm's) and `registryAuth`, are not unknown: the spec says every current provider ignores
  them, and so does the runtime (logged once per field, the value never: registryAuth holds a credential).
* Resource quantities are checked by form only; limits and requests are recorded and shown, not
  enforced (there is no cgroup per replica).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

from faasgd.errors import FaasgdError

NAMESPACE = "openfaas-fn"  # CE's only function namespace
CE_MAX_REPLICAS = 5  # faas-netes replica_reader.go MaxReplicas
MAX_FUNCTIONS = 15  # faas-netes replica_reader.go MaxFunctions
MIN_LABEL, MAX_LABEL = "com.openfaas.scale.min", "com.openfaas.scale.max"
PRO_LABELS = ("com.openfaas.scale.zero-duration", "com.openfaas.scale.target", "com.openfaas.scale.type")
RESOURCE_KEYS = ("memory", "cpu")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
IGNORED_FIELDS = ("network", "registryAuth")  # deprecated in the spec (api-docs/spec.openapi.yml): "completely ignored"
_ignored_logged: set[str] = set()  # the ignored fields already logged by this process
log = logging.getLogger(__name__)
_QUANTITY = re.compile(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+|[kMGTPE]i|[numkMGTPE])?$")


class Refused(FaasgdError):
    """Raised when the runtime refuses an API request; `http_status` is what it answers (CE's status)."""

    def __init__(self, status: int, message: str):
        self.http_status = status
        super().__init__(message)


@dataclass(frozen=True)
class FunctionDeployment:
    """The body of POST/PUT /system/functions (faas-provider types.FunctionDeployment)."""

    service: str
    image: str
    env_process: str = ""
    env_vars: dict[str, str] = field(default_factory=dict)
    constraints: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    read_only_root_filesystem: bool = False


def _text(name, value):
    if not isinstance(value, str):
        raise Refused(400, f"{name}: must be a string, got {type(value).__name__}")
    return value


def _strings(name, value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Refused(400, f"{name}: must be a list of strings")
    return tuple(value)


def _mapping(name, value):
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Refused(400, f"{name}: must be an object of strings")
    return dict(value)


def _resources(name, value):
    resources = _mapping(name, value)
    unknown = sorted(set(resources) - set(RESOURCE_KEYS))
    if unknown:
        raise Refused(400, f"{name}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(RESOURCE_KEYS)}")
    for key, quantity in resources.items():
        if quantity and not _QUANTITY.match(quantity):
            raise Refused(400, f"{name}.{key}: {quantity!r} is not a Kubernetes quantity (e.g. 512Mi, 500m, 1)")
    return {k: v for k, v in resources.items() if v}


def _flag(name, value):
    if not isinstance(value, bool):
        raise Refused(400, f"{name}: must be true or false")
    return value


# JSON name -> (attribute of FunctionDeployment, reader); namespace is checked, not kept (there is one)
FIELDS = {"service": ("service", _text), "image": ("image", _text), "namespace": (None, _text),
          "envProcess": ("env_process", _text), "envVars": ("env_vars", _mapping),
          "constraints": ("constraints", _strings), "secrets": ("secrets", _strings), "labels": ("labels", _mapping),
          "annotations": ("annotations", _mapping), "limits": ("limits", _resources),
          "requests": ("requests", _resources), "readOnlyRootFilesystem": ("read_only_root_filesystem", _flag)}


def read_json(body: bytes):
    """A request body as JSON (an empty one is null); ValueError for anything else, nesting too deep included
    (json raises RecursionError there, which no /system handler would otherwise answer but with a 500)."""
    try:
        return json.loads(body or b"null")
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def parse_deployment(body: bytes) -> FunctionDeployment:
    """A FunctionDeployment from a request body; Refused(400) naming the field, as faas-netes words it."""
    try:
        data = read_json(body)
    except ValueError as error:
        raise Refused(400, f"failed to unmarshal request: {error}") from None
    if not isinstance(data, dict):
        raise Refused(400, "failed to unmarshal request: the body must be a JSON object (a FunctionDeployment)")
    unknown = sorted(set(data) - set(FIELDS) - set(IGNORED_FIELDS))
    if unknown:
        raise Refused(400, f"unknown field(s) {', '.join(unknown)}; a FunctionDeployment has {', '.join(FIELDS)}")
    ignore_deprecated(data)
    values = {}
    for name, value in ((name, value) for name, value in data.items() if name not in IGNORED_FIELDS):
        attribute, read = FIELDS[name]
        if value is not None and attribute is not None:
            values[attribute] = read(name, value)
        elif name == "namespace" and value not in (None, "", NAMESPACE):
            raise Refused(400, f"namespace must be: {NAMESPACE}")
    deployment = FunctionDeployment(**{"service": "", "image": "", **values})
    validate(deployment)
    return deployment


def ignore_deprecated(data: dict) -> None:
    """Log, the first time each is seen, that a deprecated field of the body is ignored (its name only)."""
    for name in IGNORED_FIELDS:
        if name in data and name not in _ignored_logged:
            _ignored_logged.add(name)
            log.warning("deploy: the field %s is deprecated in OpenFaaS's API and ignored, as by every current "
                        "provider (logged once)", name)


def validate(deployment: FunctionDeployment) -> None:
    """faas-netes ValidateDeployRequest: the service is a DNS label, an image is given, CE's scale labels."""
    if not deployment.service:
        raise Refused(400, "validation failed: service: is required")
    if not _DNS_LABEL.match(deployment.service) or len(deployment.service) > 63:
        raise Refused(400, f"validation failed: service: ({deployment.service}) is invalid, must be a valid DNS entry")
    if not deployment.image:
        raise Refused(400, "validation failed: image: is required")
    labels = deployment.labels
    if labels.get("com.openfaas.scale.zero") == "true":
        raise Refused(400, "validation failed: com.openfaas.scale.zero not available for Community Edition")
    for label in PRO_LABELS:
        if label in labels:
            raise Refused(400, f"validation failed: {label} not available for Community Edition")
    for label in (MAX_LABEL, MIN_LABEL):
        if _integer(labels.get(label)) is not None and _integer(labels[label]) > CE_MAX_REPLICAS:
            raise Refused(400, f"validation failed: {label} is set too high for Community Edition")


def scale_range(labels: dict[str, str]) -> tuple[int, int]:
    """(initial replicas, most replicas): scale.min (1 unless a positive integer), scale.max (at most 5)."""
    low = _integer(labels.get(MIN_LABEL))
    high = _integer(labels.get(MAX_LABEL))
    low = low if low is not None and low > 0 else 1
    high = high if high is not None and high > 0 else CE_MAX_REPLICAS
    return low, max(low, min(high, CE_MAX_REPLICAS))


def clamp_replicas(requested: int, most: int) -> int:
    """The replica count a scale request gets: at least 1, as CE's gateway raises 0 to 1, and at most
    `most`, the function's scale.max (itself at most 5).

    Departure: CE's gateway clamps every function to [1, 5] (gateway/scaling/ranges.go) whatever its
    labels say; the runtime also keeps to scale.max, which its stack sets on purpose. It does not
    raise a count to scale.min: that label is the initial count and the autoscaler's floor, and
    `kubectl scale` to fewer replicas is allowed on CE (test.sh runs one replica per worker).
    """
    return max(1, min(requested, most, CE_MAX_REPLICAS))


def _integer(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
