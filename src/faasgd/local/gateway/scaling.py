"""The body of POST /system/scale-function/NAME, validated field by field.

As faas-netes does, the function is the one the path names: a `serviceName` that differs is ignored.
The count is clamped by the registry (faasgd.local.api.clamp_replicas), not refused. Departures:
unknown fields are refused naming them (Go drops them), and a negative or fractional count is a 400
naming `replicas` (Go's decoder fails on it with "Error unmarshalling request body").
"""

from __future__ import annotations

import json

from faasgd.checks import is_whole
from faasgd.local.api import NAMESPACE, read_json

SCALE_FIELDS = ("serviceName", "replicas", "namespace")


def scale_request(body: bytes, function: str) -> tuple[int | None, str | None]:
    """(replicas, None) from a scale body, or (None, a message naming the bad field)."""
    example = f'{{"serviceName": "{function}", "replicas": 2}}'
    try:
        data = read_json(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, f"request body: must be a JSON object like {example}, got {body[:100]!r}"
    unknown = sorted(set(data) - set(SCALE_FIELDS))
    if unknown:
        return None, f"request body: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(SCALE_FIELDS)}"
    replicas = data.get("replicas")
    if not is_whole(replicas) or replicas < 0:
        given = json.dumps(replicas) if "replicas" in data else "nothing"
        return None, f"replicas: must be a whole number >= 0, got {given}"
    if data.get("namespace") not in (None, "", NAMESPACE):
        return None, f"namespace: must be {NAMESPACE} (the only namespace), got {data['namespace']!r}"
    return replicas, None
