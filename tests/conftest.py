"""Shared fixtures: real store servers on free loopback ports, one of each per test session.

pytest puts this directory on sys.path, so tests at any depth import their helpers as `support.<module>`
(tests/support/); what the benches use too is the package's own faasgd.testing.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

from faasgd.local.services.memcached_pool import start_memcached_pool
from faasgd.local.services.store_groups import ServerGroup
from faasgd.local.services.stores import ServerProcess, start_memcached, start_redis
from support import openfaas_bin

# Every `faasgd up` of the suite runs its replicas as a checkout beside ../shared/bin does: under the real
# of-watchdog when one is found (tests copy the stack to temporary folders, where `auto` would not look
# beside the project, so it is named here). FAASGD_WATCHDOG=off in the shell runs the suite bare.
if "FAASGD_WATCHDOG" not in os.environ and openfaas_bin.find("fwatchdog"):
    os.environ["FAASGD_WATCHDOG"] = openfaas_bin.find("fwatchdog")

# The inflated copies of gzip'd data files the tests' own processes make (faasgd.data.inflated) go to a folder of
# this session's, removed at its end, not to the user's cache (the tests write many small data sets).
if "FAASGD_CACHE_DIR" not in os.environ:
    os.environ["FAASGD_CACHE_DIR"] = tempfile.mkdtemp(prefix="faasgd-test-cache-")
    atexit.register(shutil.rmtree, os.environ["FAASGD_CACHE_DIR"], True)


@pytest.fixture(scope="session")
def redis_server() -> ServerProcess:
    """A redis-server on 127.0.0.1 (no password, no persistence), stopped at the end of the session."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def memcached_server() -> ServerProcess:
    """A memcached on 127.0.0.1 (2 MB item limit), stopped at the end of the session."""
    server = start_memcached()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def memcached_pool() -> ServerGroup:
    """Three memcached servers on 127.0.0.1 as one store (`url`: memcached://127.0.0.1:P1,P2,P3), stopped at the
    end of the session. Tests that pause or restart a member start a pool of their own."""
    pool = start_memcached_pool(servers=3)
    yield pool
    pool.stop()


@pytest.fixture(scope="session")
def s3_endpoint():
    """moto's S3 server on 127.0.0.1 checking signatures, an IAM user's keys and an empty bucket (session-wide)."""
    from faasgd.testing.s3_server import S3Endpoint, enable_auth, make_bucket, start_s3

    server = start_s3()
    try:
        settings = enable_auth(server)
        make_bucket(settings, "faasgd-test")
        yield S3Endpoint(server, settings, "faasgd-test")
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dynamodb_endpoint():
    """moto's server on 127.0.0.1 answering DynamoDB's API, with the channel's two tables (session-wide)."""
    from faasgd.testing.s3_server import DynamoEndpoint, start_s3

    server = start_s3()
    try:
        yield DynamoEndpoint.made(server)
    finally:
        server.stop()
