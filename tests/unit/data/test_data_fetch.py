"""Data on purpose, in process: the core never downloads; a training call for missing data is a 409
that writes nothing; `faasgd data fetch` checks its flags before touching anything; the fetch lock
waits, then reports; `faasgd data list` says what is where. (Downloads: tests/integration/test_data_fetch_real.py.)
"""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import pathlib
import socket
import uuid
import zipfile

import emnist
import numpy as np
import pytest

from faasgd.cli import download
from faasgd.cli.main import main
from faasgd.data import load_shard
from faasgd.errors import DataMissing
from faasgd.functions import replica_cache
from faasgd.store import open_store
from support.fake_clock import StepClock
from support.fake_gateway import FakeGateway
from support.handlers import FakeEvent, load_handler

setup_handler = load_handler("emnist-setup")


@pytest.fixture
def archive_env(tmp_path, monkeypatch):
    """FAASGD_EMNIST_ARCHIVE in a folder that does not exist yet."""
    path = tmp_path / "data" / "emnist.zip"
    monkeypatch.setenv("FAASGD_EMNIST_ARCHIVE", str(path))
    return path


def test_setup_for_missing_data_answers_409_naming_the_command_and_writes_nothing(archive_env, monkeypatch):
    url = f"memory://h{uuid.uuid4().hex[:10]}"
    for key, value in {"store_url": url, "dataset": "emnist-letters", "gateway_url": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(emnist, "ensure_cached_data", lambda: pytest.fail("the core asked the package to download"))
    gateway = FakeGateway().install(monkeypatch)
    try:
        with pytest.raises(DataMissing) as info:
            setup_handler.handle(FakeEvent("POST", {"number_of_workers": 2}), None)
    finally:
        replica_cache.forget()
    assert info.value.http_status == 409 and info.value.field == "dataset"
    assert "emnist-letters" in str(info.value) and "`faasgd data fetch emnist`" in str(info.value)
    assert list(open_store(url).client._values) == [] and gateway.take() == []
    assert not archive_env.parent.exists()


def test_emnist_missing_archive_is_a_409_naming_the_fetch_command_and_downloads_nothing(tmp_path, monkeypatch):
    calls = []
    for name in ("ensure_cached_data", "download_file", "download_large_google_drive_file"):
        monkeypatch.setattr(emnist, name, lambda *a, name=name, **k: calls.append(name))
    monkeypatch.setattr(socket.socket, "connect", lambda *a: calls.append("connect"))
    monkeypatch.setattr(emnist, "CACHE_FILE_PATH", str(tmp_path / "none" / "emnist.zip"))
    with pytest.raises(DataMissing) as err:
        load_shard("emnist-digits")
    assert err.value.http_status == 409 and err.value.field == "dataset" and err.value.dataset == "emnist-digits"
    assert str(err.value) == (f"dataset: emnist-digits is not on this machine (no EMNIST archive at "
                              f"{tmp_path / 'none' / 'emnist.zip'}); get it with `faasgd data fetch emnist`")
    assert calls == [] and not (tmp_path / "none").exists()


def test_the_core_never_calls_a_downloader():
    """No module of the core's data package names the emnist package's download functions."""
    import faasgd.data

    folder = pathlib.Path(faasgd.data.__file__).parent
    for path in folder.glob("*.py"):
        text = path.read_text()
        for name in ("ensure_cached_data", "download_file", "download_large", "SOURCE_URLS", "httpx", "urllib.request"):
            assert name not in text, f"{name} in {path.name}"


@pytest.mark.parametrize("argv, field", [
    (["emnist", "--sha256", "xyz"], "sha256"),
    (["emnist", "--url", "ftp://mirror/gzip.zip"], "url"),
    (["emnist", "--url", "https://user:hunter2@/"], "url"),
    (["emnist", "--url", "http://127.0.0.1:99999/x"], "url"),
    (["emnist", "--timeout", "0"], "timeout"),
    (["emnist", "--deadline", "-1"], "deadline"),
    (["emnist", "--lock-wait", "-1"], "lock_wait"),
    (["fashion-mnist"], "dataset"),
])
def test_fetch_flags_exit_2_naming_the_flag_before_anything_is_made(archive_env, capsys, argv, field):
    assert main(["data", "fetch", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"faasgd: error: {field}: ") and err.count("\n") == 1 and "hunter2" not in err
    assert not archive_env.parent.exists()


def test_the_lock_waits_for_its_holder_then_reports(tmp_path):
    lock = str(tmp_path / "emnist.zip.lock")
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    clock, said = StepClock(), []
    try:
        with pytest.raises(download.DownloadError, match="another fetch holds .*still after 2 s"):
            with download.held(lock, 2.0, said.append, clock=clock, sleep=clock.sleep):
                pytest.fail("the lock was taken while another held it")
        assert len(said) == 1 and "waiting for it" in said[0] and sum(clock.waits) == pytest.approx(2.0)

        def release_after_one_wait(seconds):
            clock.sleep(seconds)
            fcntl.flock(holder, fcntl.LOCK_UN)

        entered = []
        with download.held(lock, 60.0, said.append, clock=clock, sleep=release_after_one_wait):
            entered.append(True)
        assert entered == [True]
    finally:
        os.close(holder)


def test_data_list_says_what_is_present_where_and_its_size(archive_env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path / "no-fashion"))
    assert main(["data", "list", "--json"]) == 0
    rows = {row["source"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["emnist"] == {"source": "emnist", "datasets": [], "present": False, "where": str(archive_env),
                              "bytes": 0, "get": "faasgd data fetch emnist"}
    assert not rows["fashion-mnist"]["present"] and rows["synthetic"]["present"]
    archive_env.parent.mkdir()
    with zipfile.ZipFile(archive_env, "w") as archive:
        for variant in ("mnist", "digits"):
            name = emnist.ZIP_PATH_TEMPLATE.format(dataset=variant, usage="test", matrix="images", dim=3)
            archive.writestr(name, gzip.compress(np.zeros(8, np.uint8).tobytes()))
    assert main(["data", "list", "--json"]) == 0
    row = {row["source"]: row for row in json.loads(capsys.readouterr().out)}["emnist"]
    assert row["present"] and row["bytes"] == archive_env.stat().st_size
    assert row["datasets"] == ["emnist-digits", "emnist-mnist"]
    assert main(["data", "list"]) == 0
    table = capsys.readouterr().out
    assert "emnist-digits, emnist-mnist" in table and "present" in table and "missing" in table
