"""The gateway's /system/secrets, answered as faas-netes' SecretsHandler answers, over the runtime's
secret files (faasgd.local.services.secrets).

GET lists [{"name", "namespace"}] (values are never returned); POST creates (409 if it exists), PUT
replaces (404 if absent), DELETE removes (404 if absent): 202 with an empty body. A body is
{"name", "namespace", "value"} or with "rawValue" (base64, as Go encodes bytes; it wins over value,
as in faas-netes). A bad name answers 422, as Kubernetes' Invalid does. Departures: unknown fields
and a namespace other than openfaas-fn are refused with a 400 naming them (faas-netes answers an
empty 400 for the latter), and no answer or error ever echoes a value.
"""

from __future__ import annotations

import base64
import binascii

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from faasgd.local.api import NAMESPACE, Refused, read_json
from faasgd.local.gateway.responses import error, read_body, too_large
from faasgd.local.gateway.system import namespace_problem
from faasgd.local.services.secrets import MAX_VALUE_BYTES, SecretStore, check_name

SECRET_FIELDS = ("name", "namespace", "value", "rawValue")
MAX_SECRET_BODY_BYTES = 4 * MAX_VALUE_BYTES  # faas-cli --from-file sends the value twice, once as base64


class SecretsApi:
    """The handler of /system/secrets."""

    def __init__(self, secrets_dir: str | None):
        self.store = SecretStore(secrets_dir) if secrets_dir else None

    def routes(self) -> list[Route]:
        """The route, when there is a secrets folder (without one the path is unknown: 404)."""
        return [Route("/system/secrets", self.handle, methods=["GET", "POST", "PUT", "DELETE"])] if self.store else []

    async def handle(self, request: Request) -> Response:
        if problem := namespace_problem(request):
            return problem
        if request.method == "GET":
            names = await to_thread.run_sync(self.store.names)
            return JSONResponse([{"name": name, "namespace": NAMESPACE} for name in names])
        body = await read_body(request, MAX_SECRET_BODY_BYTES)
        if body is None:
            return too_large(MAX_SECRET_BODY_BYTES, "a secret")
        try:
            name, value = parse_secret(body, needs_value=request.method != "DELETE")
            action = {"POST": self.store.create, "PUT": self.store.replace}.get(request.method)
            if action is None:
                await to_thread.run_sync(self.store.remove, name)
            else:
                await to_thread.run_sync(action, name, value)
        except Refused as refused:
            return error(refused.http_status, str(refused))
        return Response(status_code=202)


def parse_secret(body: bytes, needs_value: bool) -> tuple[str, bytes]:
    """(name, value) from a Secret body; Refused naming the field (never quoting a value)."""
    try:
        data = read_json(body)
    except ValueError:
        raise Refused(400, "request body: must be a JSON object like {\"name\": ..., \"value\": ...}") from None
    if not isinstance(data, dict):
        raise Refused(400, "request body: must be a JSON object like {\"name\": ..., \"value\": ...}")
    unknown = sorted(set(data) - set(SECRET_FIELDS))
    if unknown:
        raise Refused(400, f"request body: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(SECRET_FIELDS)}")
    if data.get("namespace") not in (None, "", NAMESPACE):
        raise Refused(400, f"namespace: must be {NAMESPACE}, got {str(data['namespace'])[:80]!r}")
    name = check_name(data.get("name"))
    if not needs_value:
        return name, b""
    value = secret_value(data)
    if len(value) > MAX_VALUE_BYTES:
        raise Refused(422, f"value: a secret holds at most {MAX_VALUE_BYTES} bytes, got {len(value)}")
    return name, value


def secret_value(data: dict) -> bytes:
    """rawValue (base64) when given, else value (a string)."""
    raw, value = data.get("rawValue"), data.get("value")
    if raw not in (None, ""):
        if not isinstance(raw, str):
            raise Refused(400, "rawValue: must be a base64 string")
        try:
            return base64.b64decode(raw, validate=True)
        except binascii.Error:
            raise Refused(400, "rawValue: is not valid base64") from None
    if value is not None and not isinstance(value, str):
        raise Refused(400, "value: must be a string")
    return (value or "").encode()
