"""The template's bodies and error answers (faasgd.functions.http_call), as plain functions: no app, no socket."""

from __future__ import annotations

import json

import pytest

from faasgd.errors import ConfigError, MethodNotAllowed, StoreUnavailable
from faasgd.functions import http_call
from faasgd.functions.http_call import FORM_TYPE, MAX_MESSAGE, ContentTypeNotServed, job_body, read_body


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", "", "application/vnd.api+json",
                                          "Application/JSON"])
def test_json_is_read_under_every_label_clients_give_it(content_type):
    assert read_body(b'{"batch_size": 64, "hidden": [256, 128]}', content_type) == {"batch_size": 64,
                                                                                     "hidden": [256, 128]}


def test_an_empty_body_is_an_empty_object_whatever_its_label():
    assert read_body(b"", "application/octet-stream") == {} and read_body(b" \n", FORM_TYPE) == {}


@pytest.mark.parametrize("encoding, named", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16 or UTF-32 (NUL bytes)"),
                                             ("utf-16-be", "UTF-16 or UTF-32"), ("utf-32", "UTF-32"),
                                             ("latin-1", "not UTF-8 (byte 29)")])
@pytest.mark.parametrize("content_type", ["application/json", "", FORM_TYPE])
def test_a_body_not_in_utf8_is_a_400_naming_its_encoding(encoding, named, content_type):
    body = '{"model": "mlp", "note": "caf\u00e9"}'.encode(encoding)
    with pytest.raises(ConfigError) as info:
        read_body(body, content_type)
    assert info.value.field == "body" and f"must be encoded as UTF-8 (JSON's encoding), got {named}" in str(info.value)


def test_a_utf8_byte_order_mark_is_skipped():
    assert read_body(b"\xef\xbb\xbf" + '{"note": "caf\u00e9"}'.encode(), "application/json") == {"note": "caf\u00e9"}


def test_a_call_that_starts_a_job_needs_a_body_and_no_query():
    assert job_body(Event(b'{"a": 1}', {})) == {"a": 1} and job_body(Event(b"{}", {})) == {}
    with pytest.raises(ConfigError, match=r"body: a job needs a JSON object body .*send \{\} for every default"):
        job_body(Event(b" \n", {}))
    with pytest.raises(ConfigError) as info:
        job_body(Event(b"", {"job_id": "J", "model": "npz"}))
    assert info.value.field == "job_id" and "never by a POST" in str(info.value)


class Event:
    """The template's Event as job_body reads it."""

    def __init__(self, body: bytes, query: dict):
        self.body, self.query = body, query

    def json(self):
        return read_body(self.body, "application/json")


def test_a_form_gives_strings_and_json_labelled_a_form_is_json():
    assert read_body(b"number_of_workers=2&hidden_sizes=256%2C128&note=", FORM_TYPE) == {
        "number_of_workers": "2", "hidden_sizes": "256,128", "note": ""}
    assert read_body(b' {"a": 1}', FORM_TYPE) == {"a": 1}  # curl -d
    assert read_body(b"[1, 2]", FORM_TYPE) == [1, 2]


@pytest.mark.parametrize("body, content_type, field, message", [
    (b'{"batch_size": ', "application/json", "body", "body: invalid JSON ("),
    (b"\xff\xfe", "application/json", "body", "body: must be encoded as UTF-8 (JSON's encoding), got UTF-16"),
    (b"[" * 100000 + b"]" * 100000, "application/json", "body", "body: JSON nested too deeply"),
    (b'{"a": 1, "a": 2}', "application/json", "a", "a: given twice in the body"),
    (b'{"outer": {"b": 1, "b": 1}}', "text/plain", "b", "b: given twice in the body"),
    (b"a=1&a=2", FORM_TYPE, "a", "a: given twice in the form"),
    (b"=1", FORM_TYPE, "body", "body: a form field has no name"),
    (b"a=1&b", FORM_TYPE, "body", "body: invalid form ("),
])
def test_bodies_that_cannot_be_read_are_400s_naming_the_field(body, content_type, field, message):
    with pytest.raises(ConfigError) as info:
        read_body(body, content_type)
    assert info.value.http_status == 400 and info.value.field == field
    assert str(info.value).startswith(message)


def test_a_type_neither_json_nor_a_form_is_a_415_naming_content_type():
    with pytest.raises(ContentTypeNotServed) as info:
        read_body(b"\x00\x01", "application/octet-stream")
    assert (info.value.http_status, info.value.field) == (415, "Content-Type")
    assert str(info.value) == f"Content-Type: application/octet-stream is not served (send JSON or {FORM_TYPE})"


def test_an_error_with_a_status_keeps_it_its_field_and_its_allow_list():
    assert http_call.error_answer(ConfigError("batch_size", "must be at least 1, got 0")) == (
        400, {"error": "batch_size: must be at least 1, got 0", "field": "batch_size"}, None)
    assert http_call.error_answer(StoreUnavailable("redis://redis:6379/0"))[:2] == (
        503, {"error": str(StoreUnavailable("redis://redis:6379/0"))})
    status, payload, allow = http_call.error_answer(MethodNotAllowed("GET", ("POST",)))
    assert (status, payload["field"], allow) == (405, "method", ("POST",))


@pytest.mark.parametrize("status", [None, "400", True, 200, 302, 600, 4.0e2])
def test_an_error_without_a_usable_status_is_left_to_the_internal_error(status):
    error = RuntimeError("internal detail")
    error.http_status = status
    assert http_call.error_answer(error) is None
    assert http_call.internal_error("c-42") == (500, {"error": "internal error", "call_id": "c-42"})


def test_a_long_message_is_cut_saying_how_much_was_left_out():
    answer = http_call.error_answer(ConfigError("x", "y" * 5000))
    assert len(answer[1]["error"]) < MAX_MESSAGE + 40
    assert answer[1]["error"].endswith(f"... ({5003 - MAX_MESSAGE} more characters)")
    assert http_call.cut("short") == "short"


def test_the_shims_own_answers():
    assert http_call.too_large(4096) == (413, {"error": "body: request body larger than max_request_bytes=4096",
                                               "field": "body"})
    status, payload, allow = http_call.method_not_served("TRACE", ["POST", "GET", "DELETE"])
    assert (status, allow) == (405, ("DELETE", "GET", "POST"))
    assert payload == {"error": "method: TRACE is not served here (allowed: DELETE, GET, POST)", "field": "method"}
    status, payload = http_call.late(3.0, "c-1")
    assert status == 504 and payload["call_id"] == "c-1" and "deadline (3.0 s)" in payload["error"]


def test_a_body_framed_two_ways_is_named_and_one_framing_passes():
    both = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
    assert "Content-Length and Transfer-Encoding" in http_call.framing_error(both)
    assert http_call.framing_error(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n") is None
    assert http_call.framing_error(b"POST /content-length HTTP/1.1\r\nTransfer-Encoding: chunked\r\n") is None


def test_a_request_the_server_cannot_parse_is_answered_in_json_and_cut():
    body = json.loads(http_call.unparsable_request("Bad Request", "x" * 5000))
    assert body["field"] == "request" and body["error"].startswith("request: Bad Request: xxx")
    assert len(body["error"]) == MAX_MESSAGE
