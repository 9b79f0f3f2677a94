"""HTTP basic auth on /system/*, as OpenFaaS's gateway does with basic_auth=true.

faas-provider's DecorateWithBasicAuth wraps every /system handler (functions, scale, info, secrets,
logs, namespaces, alert, telemetry) and /ui; /function/*, /async-function/*, /healthz and /metrics
stay open. A missing or wrong login answers 401 with `WWW-Authenticate: Basic realm="Restricted"`.
Departures: the 401 body is JSON {"error": "invalid credentials"} (CE writes the text alone), and
the user name is compared in constant time as well as the password. Every path under /system/ is
protected, unknown ones included, so an unauthenticated caller cannot tell which exist.
"""

from __future__ import annotations

import base64
import binascii
import hmac

from faasgd.local.gateway.responses import error

PROTECTED = "/system"
CHALLENGE = {"WWW-Authenticate": 'Basic realm="Restricted"'}


class RequireBasicAuth:
    """ASGI middleware: a request under /system must carry the login, else 401."""

    def __init__(self, app, login: tuple[str, str] | None):
        self.app, self.login = app, login

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and self.login is not None and protected(scope["path"]) \
                and not self.allows(header(scope, b"authorization")):
            await error(401, "invalid credentials", CHALLENGE)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def allows(self, authorization: str | None) -> bool:
        """True when `authorization` is `Basic base64(user:password)` with this gateway's login."""
        given = parse_basic(authorization)
        if given is None:
            return False
        user_ok = hmac.compare_digest(given[0].encode(), self.login[0].encode())
        password_ok = hmac.compare_digest(given[1].encode(), self.login[1].encode())
        return user_ok and password_ok


def protected(path: str) -> bool:
    return path == PROTECTED or path.startswith(PROTECTED + "/")


def header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def parse_basic(authorization: str | None) -> tuple[str, str] | None:
    """(user, password) from a Basic Authorization header, as Go's Request.BasicAuth reads it."""
    if not authorization or authorization[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None
