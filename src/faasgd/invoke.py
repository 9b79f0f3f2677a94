"""OpenFaaS gateway client: synchronous and asynchronous invocation (standard library only).

Async calls POST `/async-function/<name>`; the gateway answers 202 with `X-Call-Id` and the
queue-worker delivers at least once. Pass ids in payloads, never weights (NATS caps them at 1 MB).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from faasgd.errors import GatewayError

DEFAULT_GATEWAY = "http://gateway.openfaas:8080"  # the gateway's Service inside a cluster


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body or b"null")


class Gateway:
    """Invokes functions through one gateway URL; every call has a timeout."""

    def __init__(self, url: str = DEFAULT_GATEWAY, timeout_s: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                query: dict | None = None, timeout_s: float | None = None) -> Response:
        """One HTTP request to the gateway; any status is returned, only transport failures raise."""
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=timeout_s or self.timeout_s) as answer:
                return Response(answer.status, dict(answer.headers.items()), answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, dict(error.headers.items()), error.read())
        except (urllib.error.URLError, OSError) as error:
            raise GatewayError(self.url, str(getattr(error, "reason", error))) from None

    def invoke(self, function: str, payload=None, method: str = "POST", headers: dict | None = None,
               query: dict | None = None, timeout_s: float | None = None) -> Response:
        """Synchronous call of /function/<name>; JSON-encodes a non-bytes payload."""
        body, headers = _encode(payload, headers)
        return self.request(method, f"/function/{function}", body, headers, query, timeout_s)

    def invoke_async(self, function: str, payload=None, callback_url: str | None = None,
                     headers: dict | None = None) -> str:
        """Queue a call of /async-function/<name>; returns its X-Call-Id. Anything but 202 raises."""
        body, headers = _encode(payload, headers)
        if callback_url:
            headers["X-Callback-Url"] = callback_url
        answer = self.request("POST", f"/async-function/{function}", body, headers)
        if answer.status != 202:
            detail = answer.body[:200].decode("utf-8", "replace").strip()
            raise GatewayError(self.url, f"async {function}: HTTP {answer.status} {detail}".strip())
        return answer.headers.get("X-Call-Id", "")


def _encode(payload, headers: dict | None) -> tuple[bytes | None, dict]:
    headers = dict(headers or {})
    if payload is None or isinstance(payload, bytes):
        return payload, headers
    headers.setdefault("Content-Type", "application/json")
    return json.dumps(payload).encode(), headers
