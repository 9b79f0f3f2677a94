"""Calling the function handlers the way the template does, without a web server.

`load_handler("emnist-setup")` imports a function folder's handler.py; `FakeEvent` mirrors the
template's Event (body bytes, headers, method, query, path, json()). `FakeGateway` records async
invocations so a test can deliver them (once, twice, or not at all) to the train handler.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import pathlib
import threading

from faasgd.errors import ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[2]


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


class FakeGateway:
    """Stands in for Gateway: records invoke_async calls as (function, payload, headers, call_id)."""

    def __init__(self):
        self.calls: list[tuple[str, dict, dict, str]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def invoke_async(self, function, payload=None, callback_url=None, headers=None):
        with self._lock:
            call_id = f"call-{next(self._ids)}"
            headers = dict(headers or {}, **({"X-Callback-Url": callback_url} if callback_url else {}))
            self.calls.append((function, payload, headers, call_id))
            return call_id

    def take(self):
        with self._lock:
            calls, self.calls = self.calls, []
            return calls


def deliver(train_handler, call, context=None):
    """Deliver one recorded async call to the train handler as the queue-worker would."""
    _, payload, headers, call_id = call
    answer = train_handler.handle(FakeEvent("POST", payload, {**headers, "X-Call-Id": call_id}), context)
    return answer["statusCode"], answer["body"]
