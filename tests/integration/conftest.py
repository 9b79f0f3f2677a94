"""Fixtures the integration tests share (the real servers themselves: tests/conftest.py)."""

import pytest

from support.asgi_server import serve
from support.fake_replicas import CallbackRecorder, FakeReplica


@pytest.fixture(params=["redis", "memcached"])
def store_server(request):
    """Each real store server of the session in turn: a test taking it runs once on redis, once on memcached."""
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture
def replica():
    """A FakeReplica named "a" that uvicorn serves on a free loopback port (its `url`), released at the end."""
    made = FakeReplica("a")
    with serve(made) as url:
        made.url = url
        yield made
        made.release()


@pytest.fixture
def callbacks():
    """A CallbackRecorder served on a free loopback port: its `url` (…/done) is where a queue's callbacks go."""
    recorder = CallbackRecorder()
    with serve(recorder) as url:
        recorder.url = url + "/done"
        yield recorder
