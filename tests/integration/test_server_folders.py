"""A server's temp folder (local/stores.server_folder) lands in tempfile's folder, which the runtime's daemon points at
<dir>/tmp, and is made again when that folder was removed meanwhile: a server started later (the S3 server on
demand, a restarted nats-server) would otherwise fail to start."""

from __future__ import annotations

import stat
import tempfile

import pytest

from faasgd.local.services.stores import start_memcached

pytestmark = pytest.mark.integration


def test_a_server_starts_in_a_temp_folder_removed_since_and_its_own_folder_goes_with_it(tmp_path, monkeypatch):
    runtime_tmp = tmp_path / ".faasgd" / "tmp"  # never made, or removed by a user while the runtime runs
    monkeypatch.setattr(tempfile, "tempdir", str(runtime_tmp))
    server = start_memcached()
    try:
        (own,) = runtime_tmp.iterdir()
        assert own.name.startswith("faasgd-memcached-") and (own / "memcached.log").exists()
        assert stat.S_IMODE(runtime_tmp.stat().st_mode) == 0o700  # the servers' files: the owner's only
    finally:
        server.stop()
    assert list(runtime_tmp.iterdir()) == []
