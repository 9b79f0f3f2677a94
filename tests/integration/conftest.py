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


@pytest.fixture(scope="session")
def redis_cluster():
    """A Redis Cluster of 3 masters with a replica each on loopback (faasgd.local.services.redis_cluster), stopped at the end
    of the session. Shared: a test that kills a node starts a cluster of its own."""
    from faasgd.local.services.redis_cluster import start_redis_cluster

    group = start_redis_cluster(masters=3, replicas=1)
    yield group
    group.stop()
