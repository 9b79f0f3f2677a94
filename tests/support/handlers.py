"""Calling the function handlers the way the template does, without a web server.

`load_handler("emnist-setup")` imports a function folder's handler.py; `FakeEvent` mirrors the
template's Event (body bytes, headers, method, query, path, json()); `deliver` hands a call the
fake gateway recorded to the train handler as the queue-worker would.
"""

from __future__ import annotations

import importlib.util
import json

from faasgd.errors import ConfigError
from support.paths import ROOT


def load_handler(function: str):
    path = ROOT / function / "handler.py"
    spec = importlib.util.spec_from_file_location(f"handler_{function.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BadJson(ConfigError):
    """Raised like the template's InvalidBody (400, field body) when the body is not JSON."""


class FakeEvent:
    def __init__(self, method="POST", body=b"", headers=None, query=None, path="/"):
        self.method, self.path = method, path
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = dict(headers or {})
        self.query = dict(query or {})

    def json(self):
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise BadJson("body", f"invalid JSON ({error})") from None


def deliver(train_handler, call, context=None) -> tuple[int, dict]:
    """Deliver one recorded async call (support.fake_gateway.Call) to the train handler."""
    event = FakeEvent("POST", call.payload, {**call.headers, "X-Call-Id": call.call_id})
    answer = train_handler.handle(event, context)
    return answer["statusCode"], answer["body"]
