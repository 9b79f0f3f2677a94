"""An HTTP call to a function as the template's index.py reads and answers it: the body as an object, errors as JSON.

    values = read_body(b"number_of_workers=2", "application/x-www-form-urlencoded")  # {"number_of_workers": "2"}
    status, payload, allow = error_answer(exc)  # (400, {"error": "...", "field": "batch_size"}, None)

Bodies (`read_body`): JSON when labelled application/json, `+json`, text/plain or nothing (`faas-cli invoke`
sends text/plain); a form when labelled application/x-www-form-urlencoded (values are strings), unless the
body starts with { or [ (`curl -d` and urllib label JSON a form too); {} for an empty body; any other type
is a 415 naming Content-Type. Bodies are UTF-8 (JSON's encoding; a UTF-8 byte order mark is skipped): UTF-16
or UTF-32 (a byte order mark, or NUL bytes no JSON text holds) and bytes that are not UTF-8 are a 400 on
`body` naming the encoding. Invalid or too deeply nested JSON is a 400 on `body`, and so is a key given
twice (which one counts would depend on the parser) or a form field without a name.

A call that starts a job (`job_body`) must carry its body: an empty one is a 400 on `body` (`{}` asks for
every default), and so is a query string (what a POST starts comes from its body alone; `?job_id=` is GET's).

Errors (`error_answer`): an exception with an integer `http_status` in 400..599 keeps it, with its `field`
and an `Allow` list for one with `allow`; anything else is None, which the caller answers as
`internal_error` (a 500 naming only the call id; the traceback goes to the log). A message quoting an
oversize value is cut at MAX_MESSAGE characters; message and field have every URL's password masked (a caller
may send a store URL where a store's name belongs). `framing_error` and `unparsable_request` are the two
answers the server itself gives before any route (waitress's parser, in index.py).
"""

from __future__ import annotations

import codecs
import json
from typing import Any, Iterable
from urllib.parse import parse_qsl

from faasgd.errors import ConfigError
from faasgd.store.url import mask_urls

JSON_TYPES = ("", "application/json", "text/plain")
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_MESSAGE = 1000  # characters of an error message; the rest (an oversize value it quotes) is cut


class ContentTypeNotServed(ConfigError):
    """Raised when a body comes with a Content-Type the function cannot read (neither JSON nor a form)."""

    http_status = 415

    def __init__(self, content_type: str):
        super().__init__("Content-Type", f"{content_type} is not served (send JSON or {FORM_TYPE})")


def job_body(event: Any) -> Any:
    """The body of a POST that starts a job (event: the template's Event): required, without a query string."""
    for key in getattr(event, "query", None) or {}:
        raise ConfigError(str(key)[:100], "a POST starts a job from its body alone; query parameters are read by "
                                          "GET (a job's status: GET ?job_id=J), never by a POST")
    if not event.body.strip():
        raise ConfigError("body", "a job needs a JSON object body of config keys; none was sent (send {} for "
                                  "every default)")
    return event.json()


def read_body(body: bytes, content_type: str) -> Any:
    """The body as an object: JSON or a form; {} for an empty body (see the module's docstring)."""
    if not body.strip():
        return {}
    content_type = content_type.lower()
    if content_type not in JSON_TYPES + (FORM_TYPE,) and not content_type.endswith("+json"):
        raise ContentTypeNotServed(content_type)
    check_encoding(body)
    if content_type == FORM_TYPE:
        if not body.lstrip().startswith((b"{", b"[")):
            return read_form(body)
    return read_json(body)


def check_encoding(body: bytes) -> None:
    """A 400 on `body` naming the encoding unless the body is UTF-8 (json.loads would guess UTF-16 and UTF-32)."""
    boms = {codecs.BOM_UTF32_LE: "UTF-32", codecs.BOM_UTF32_BE: "UTF-32", codecs.BOM_UTF16_LE: "UTF-16",
            codecs.BOM_UTF16_BE: "UTF-16"}
    found = next((name for bom, name in boms.items() if body.startswith(bom)), None)
    if found is None and b"\x00" in body:
        found = "UTF-16 or UTF-32 (NUL bytes)"
    if found is None:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            found = f"not UTF-8 (byte {exc.start})"
    if found:
        raise ConfigError("body", f"must be encoded as UTF-8 (JSON's encoding), got {found}")


def read_json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8-sig"), object_pairs_hook=lambda pairs: unique_keys(pairs, "body"))
    except RecursionError:
        raise ConfigError("body", "JSON nested too deeply") from None
    except ConfigError:
        raise
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ConfigError("body", f"invalid JSON ({exc})") from None


def read_form(body: bytes) -> dict[str, str]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError("body", f"invalid form ({exc})") from None
    if any(not key for key, _ in pairs):
        raise ConfigError("body", "a form field has no name")
    return unique_keys(pairs, "form")


def unique_keys(pairs: Iterable[tuple[str, Any]], where: str) -> dict[str, Any]:
    """The pairs as a dict; a key given twice is a 400 naming it (parsers differ on which one wins)."""
    values: dict[str, Any] = {}
    for key, value in pairs:
        if key in values:
            raise ConfigError(key, f"given twice in the {where}")
        values[key] = value
    return values


def cut(message: str) -> str:
    """The message, cut at MAX_MESSAGE characters (saying how many more there were), the password of every URL
    in it masked: a message may quote a store URL a caller sent where none is taken."""
    if len(message) <= MAX_MESSAGE:
        return mask_urls(message)
    return f"{mask_urls(message[:MAX_MESSAGE], cut=True)}... ({len(message) - MAX_MESSAGE} more characters)"


def error_answer(exc: BaseException) -> tuple[int, dict, tuple[str, ...] | None] | None:
    """(status, JSON payload, Allow) for an exception carrying its HTTP status; None for any other."""
    status = getattr(exc, "http_status", None)
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        return None
    payload: dict[str, Any] = {"error": cut(str(exc))}
    if getattr(exc, "field", None) is not None:
        payload["field"] = mask_urls(exc.field)
    allow = getattr(exc, "allow", None)
    return status, payload, tuple(allow) if allow else None


def internal_error(call_id: str | None) -> tuple[int, dict]:
    """The answer to an exception nobody described: no detail, only the call id to find it in the log."""
    return 500, {"error": "internal error", "call_id": call_id}


def late(limit_s: float, call_id: str | None) -> tuple[int, dict]:
    """The answer to a call still running near its limit (the watchdog's own 504 would be empty)."""
    message = f"the call ran past its deadline ({limit_s:.1f} s); its work stops at its next safe point"
    return 504, {"error": message, "call_id": call_id}


def too_large(max_request_bytes: int) -> tuple[int, dict]:
    return 413, {"error": f"body: request body larger than max_request_bytes={max_request_bytes}", "field": "body"}


def method_not_served(method: str, allowed: Iterable[str]) -> tuple[int, dict, tuple[str, ...]]:
    """A 405 naming the method and the methods served, with the `Allow` list."""
    allow = tuple(sorted(allowed))
    message = f"method: {method} is not served here (allowed: {', '.join(allow)})"
    return 405, {"error": message, "field": "method"}, allow


def framing_error(header_block: bytes) -> str | None:
    """Why a request's headers frame its body ambiguously: Content-Length beside Transfer-Encoding (a server
    taking one and a proxy the other would see different request boundaries); None when they do not."""
    names = {line.split(b":", 1)[0].strip().lower() for line in header_block.split(b"\n")[1:]}
    if b"content-length" in names and b"transfer-encoding" in names:
        return "Content-Length and Transfer-Encoding given together; send one"
    return None


def unparsable_request(reason: str, detail: str) -> bytes:
    """The JSON body of the server's own answer to a request it cannot parse."""
    return json.dumps({"error": f"request: {reason}: {detail}"[:MAX_MESSAGE], "field": "request"}).encode()
