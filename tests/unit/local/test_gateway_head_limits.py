"""The gateway's head limits as a plain function and in process (gateway/limits.py, responses.read_body): a URL,
header count or header size one past its limit is refused with its status; at the limit it is served."""

import pytest

from faasgd.local.gateway.limits import MAX_HEADER_BYTES, MAX_HEADERS, MAX_URL_BYTES, head_problem
from support.hostile_gateway import SETUP, hostile_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def scope(url_bytes: int = 10, headers: int = 1, header_bytes: int = 0) -> dict:
    fields = [(b"x-h%d" % i, b"v") for i in range(headers)]
    if header_bytes:
        fields = [(b"x-big", b"v" * (header_bytes - len(b"x-big") - 4))]
    return {"type": "http", "raw_path": b"/" + b"a" * (url_bytes - 1), "query_string": b"", "headers": fields}


@pytest.mark.parametrize("over, status", [({"url_bytes": MAX_URL_BYTES + 1}, 414), ({"headers": MAX_HEADERS + 1}, 431),
                                          ({"header_bytes": MAX_HEADER_BYTES + 1}, 431)])
def test_one_past_a_limit_is_refused_and_the_limit_itself_is_not(over, status):
    assert head_problem(scope(**over))[0] == status
    at = {key: value - 1 for key, value in over.items()}
    assert head_problem(scope(**at)) is None


async def test_a_long_job_id_is_a_414_before_auth_routes_or_replicas(tmp_path):
    async with hostile_gateway(tmp_path) as door:
        answer = await door.refuses(414, "the URL (path and query) is", door.raw(
            "GET", f"/function/{SETUP}?job_id=j" + "0" * 100_000, [], []))
        assert answer.headers["connection"] == "close"


async def test_a_declared_body_over_the_limit_is_a_413_before_any_byte_is_read(tmp_path):
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(413, "its Content-Length says 107374182400; nothing was read", door.raw(
            "POST", f"/async-function/{SETUP}", [(b"content-length", str(100 << 30).encode())], []))
