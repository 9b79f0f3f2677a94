"""What several subcommands share: finding the gateway and turning its error answers into faasgd errors."""

from __future__ import annotations

import os

from faasgd.errors import FaasgdError
from faasgd.invoke import Gateway, Response
from faasgd.local import control

DEFAULT_GATEWAY = "http://127.0.0.1:8080"


def gateway_url(args) -> str:
    """--gateway, then OPENFAAS_URL, then the running local runtime, then 127.0.0.1:8080 (faas-cli's order)."""
    if getattr(args, "gateway", None):
        return args.gateway
    if os.environ.get("OPENFAAS_URL"):
        return os.environ["OPENFAAS_URL"]
    state = control.read_state(getattr(args, "dir", control.DEFAULT_DIR))
    return state["gateway_url"] if state else DEFAULT_GATEWAY


def gateway(args, timeout_s: float = 30.0) -> Gateway:
    return Gateway(gateway_url(args), timeout_s=timeout_s)


class FunctionError(FaasgdError):
    """Raised when a function answers an error status; carries that status and the function's message."""

    def __init__(self, status: int, message: str, field: str | None = None):
        self.http_status, self.field = status, field
        super().__init__(message)


def raise_for_answer(answer: Response, what: str) -> dict:
    """The JSON body of a 2xx answer; a FunctionError with the function's own message otherwise."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if 200 <= answer.status < 300 and body is not None:
        return body
    if isinstance(body, dict) and body.get("error"):
        raise FunctionError(answer.status, body["error"], body.get("field"))
    text = answer.body[:300].decode("utf-8", "replace").strip()
    raise FunctionError(answer.status, f"{what}: HTTP {answer.status}" + (f": {text}" if text else ""))
