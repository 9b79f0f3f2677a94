"""Tests of the template's example handler (run by tox in the image's `test` stage).

faas-cli overlays your function folder on this one, so a handler without its own
handler_test.py would meet these tests: they skip unless the handler is the echo example.
"""

import json

import pytest

from . import handler

pytestmark = pytest.mark.skipif(
    not getattr(handler, "TEMPLATE_EXAMPLE", False), reason="not the template's example handler"
)


class FakeEvent:
    def __init__(self, body=b"", method="POST", path="/", query=None):
        self.body, self.method, self.path = body, method, path
        self.query, self.headers = query or {}, {}

    def json(self):
        return json.loads(self.body) if self.body else {}


class FakeContext:
    hostname = "test-host"


def test_echoes_the_json_body_and_request_line():
    event = FakeEvent(b'{"batch_size": 64}', method="PUT", path="/jobs/1", query={"x": "1"})
    res = handler.handle(event, FakeContext())
    assert res["statusCode"] == 200
    assert res["body"] == {
        "method": "PUT", "path": "/jobs/1", "query": {"x": "1"},
        "json": {"batch_size": 64}, "hostname": "test-host",
    }


def test_empty_body_is_an_empty_object():
    assert handler.handle(FakeEvent(), FakeContext())["body"]["json"] == {}
