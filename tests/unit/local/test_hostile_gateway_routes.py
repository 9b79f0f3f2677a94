"""The local gateway's function routes as a hostile caller meets them, in process (support/hostile_gateway.py):
methods a route does not serve (TRACE, CONNECT, unknown ones) are 405 JSON with Allow, unknown paths and
functions 404 JSON, a bad X-Callback-Url 400 naming it, bodies past a limit 413, and requests no HTTP client
would send (CR or LF in a header value, Content-Length beside Transfer-Encoding, a body cut off, paths that
climb) refused or kept where they belong. After each, no replica was called, started or stopped and
nothing was queued.
"""

import pytest

from support.hostile_gateway import SETUP, hostile_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
INVOKE_ALLOW = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"


# (method, path, Allow)
NOT_SERVED = [(method, path, allow) for method in ("TRACE", "CONNECT", "BREW") for path, allow in (
    (f"/function/{SETUP}", INVOKE_ALLOW), (f"/function/{SETUP}/x/y", INVOKE_ALLOW), (f"/async-function/{SETUP}", "POST"),
    ("/healthz", "GET, HEAD"), ("/metrics", "GET, HEAD"), ("/system/functions", "DELETE, GET, HEAD, POST, PUT"),
    ("/system/info", "GET, HEAD"))] + \
    [(method, f"/async-function/{SETUP}", "POST") for method in ("GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD")]


@pytest.mark.parametrize("method, path, allow", NOT_SERVED)
async def test_a_method_a_route_does_not_serve_is_405_json_with_allow(tmp_path, method, path, allow):
    async with hostile_gateway(tmp_path) as door:
        answer = await door.refuses(405, "" if method == "HEAD" else f"method {method} not allowed on {path}",
                                    door.send(method, path, b'{"number_of_workers": 2}'))
    assert answer.headers["allow"] == allow


UNKNOWN = {
    "/": "not found: /", "/function": "not found: /function", "/function/": "not found: /function/",
    "/async-function/": "not found: /async-function/", "/ui/": "not found: /ui/", "/healthz/": "not found: /healthz/",
    "/metrics/": "not found: /metrics/", "/.env": "not found: /.env", "/system/function/": "not found: /system/function/",
    "/system/": "not found: /system/", "/function/nope": "function not found: nope",
    "/function/nope/x": "function not found: nope", "/function/..%2f..%2fetc": "function not found: ../../etc",
    f"/function/{SETUP}.other-ns": f"function not found: {SETUP}.other-ns",
    "/function/" + "a" * 300: "function not found: aaaa",
}


@pytest.mark.parametrize("path", list(UNKNOWN))
async def test_an_unknown_path_or_function_is_404_json(tmp_path, path):
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(404, UNKNOWN[path], door.send("POST", path, b"{}"))


async def test_an_async_call_to_an_unknown_function_is_404_not_queued(tmp_path):
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(404, "function not found: nope", door.send("POST", "/async-function/nope", b"{}"))


CALLBACKS = {
    "ftp": "ftp://x/", "file": "file:///etc/passwd", "javascript": "javascript:alert(1)", "gopher": "gopher://x/",
    "no host": "http://", "no host, a path": "http:///x", "no scheme": "//x/y", "empty": "", "a bad IPv6": "http://[::1",
    "a space": "http://h/a b", "a tab": "http://h/\tx", "a DEL": "http://h/\x7f", "3000 characters": "http://h/" + "a" * 3000,
}


@pytest.mark.parametrize("case", list(CALLBACKS))
async def test_a_bad_callback_url_is_400_and_nothing_is_queued(tmp_path, case):
    async with hostile_gateway(tmp_path) as door:
        answer = await door.refuses(400, "X-Callback-Url: must be an http or https URL with a host", door.raw(
            "POST", f"/async-function/{SETUP}", [(b"x-callback-url", CALLBACKS[case].encode("latin-1"))], [b"{}"]))
    assert len(answer.body) < 600  # a 3000-character URL is not echoed whole


@pytest.mark.parametrize("value", [b"http://h/a\r\nX-Evil: 1", b"http://h/\nx", b"http://h/\rx", b"http://h/\x00"])
async def test_cr_lf_or_nul_in_a_callback_url_is_400(tmp_path, value):
    """uvicorn's h11 refuses these on the wire; an ASGI server that passed them on must not make a callback of them."""
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(400, "X-Callback-Url", door.raw("POST", f"/async-function/{SETUP}",
                                                           [(b"x-callback-url", value)], [b"{}"]))


@pytest.mark.parametrize("path", [f"/function/{SETUP}", f"/async-function/{SETUP}"])
async def test_content_length_beside_transfer_encoding_is_400(tmp_path, path):
    """Which one frames the body is how requests are smuggled past a proxy: neither is guessed."""
    headers = [(b"content-length", b"2"), (b"transfer-encoding", b"chunked")]
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(400, "Transfer-Encoding", door.raw("POST", path, headers, [b"{}"]))


@pytest.mark.parametrize("path", [f"/function/{SETUP}", f"/async-function/{SETUP}"])
async def test_a_body_cut_off_before_its_end_is_400_and_not_passed_on(tmp_path, path):
    headers = [(b"content-length", b"100"), (b"content-type", b"application/json")]
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(400, "request body: the client disconnected",
                           door.raw("POST", path, headers, [b'{"number_of_workers": 1'], disconnect=True))


@pytest.mark.parametrize("path, limit", [(f"/async-function/{SETUP}", 1 << 20), (f"/function/{SETUP}", 4096)])
async def test_a_body_past_the_limit_is_413_and_not_passed_on(tmp_path, path, limit):
    async with hostile_gateway(tmp_path, max_sync_body_bytes=4096) as door:
        await door.refuses(413, f"request body: at most {limit} bytes", door.send("POST", path, b"x" * (limit + 1)))


CLIMBING = {  # raw paths no client normalises: the route they match is the one their decoded path names
    "/function/../system/functions": (404, "function not found: .."),
    "/function/%2e%2e/system/functions": (404, "function not found: .."),
    "/async-function/../system/functions": (404, "function not found: .."),
    "/%73ystem/functions": (401, "invalid credentials"),
    "/system/../function/emnist-setup": (401, "invalid credentials"),
    "/./system/functions": (404, "not found: /./system/functions"),
}


@pytest.mark.parametrize("path", list(CLIMBING))
async def test_a_path_that_climbs_reaches_no_other_route_and_no_replica(tmp_path, path):
    status, words = CLIMBING[path]
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(status, words, door.raw("POST", path, [], [b"{}"]))
