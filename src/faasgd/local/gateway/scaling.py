"""The body of POST /system/scale-function/NAME, validated field by field."""

from __future__ import annotations

import json

from faasgd.local.gateway.directory import NAMESPACE

SCALE_FIELDS = ("serviceName", "replicas", "namespace")


def scale_request(body: bytes, function: str) -> tuple[int | None, str | None]:
    """(replicas, None) from a scale body, or (None, a message naming the bad field).

    The range of `replicas` is the registry's to check (CE clamps to [1, 5]; we refuse, naming it).
    """
    example = f'{{"serviceName": "{function}", "replicas": 2}}'
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, f"request body: must be a JSON object like {example}, got {body[:100]!r}"
    unknown = sorted(set(data) - set(SCALE_FIELDS))
    if unknown:
        return None, f"request body: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(SCALE_FIELDS)}"
    replicas = data.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        return None, f"replicas: must be an integer, got {json.dumps(replicas) if 'replicas' in data else 'nothing'}"
    if data.get("serviceName", function) not in (function, f"{function}.{NAMESPACE}"):
        return None, f"serviceName: must be the function in the path ({function}), got {data['serviceName']!r}"
    if data.get("namespace") not in (None, "", NAMESPACE):
        return None, f"namespace: must be {NAMESPACE} (the only namespace), got {data['namespace']!r}"
    return replicas, None
