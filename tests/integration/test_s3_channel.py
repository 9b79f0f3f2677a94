"""The S3-compatible channel against a real S3 server (moto's server mode on loopback, faasgd.testing.s3_server).

The blob-space contract runs over S3Space and, beside it, over real Redis and Memcached ParameterStores. Faults
are real: a stopped server process, a server that accepts and never answers, wrong keys, a missing bucket.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from support import blob_contract as contract
from faasgd.channels import S3Settings, S3Space, open_s3, parse_s3_url
from faasgd.errors import ConfigError, StateLost, StoreError, StoreTimeout, StoreUnavailable
from faasgd.local.services.stores import LOOPBACK, free_port
from faasgd.store import open_store
from faasgd.testing.s3_server import boto_client, make_bucket, settings_for, start_s3

pytestmark = pytest.mark.integration


def s3_space(s3_endpoint, prefix: str = "contract", **options) -> S3Space:
    return S3Space(parse_s3_url(f"s3://{s3_endpoint.bucket}/{prefix}"), s3_endpoint.settings, **options)


def keys_in(settings: S3Settings, bucket: str) -> list[str]:
    pages = boto_client(settings).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return [item["Key"] for page in pages for item in page.get("Contents", ())]


@pytest.fixture(params=["s3", "redis", "memcached"])
def space(request):
    """Each blob space on its real server."""
    if request.param == "s3":
        yield s3_space(request.getfixturevalue("s3_endpoint"))
        return
    server = request.getfixturevalue(f"{request.param}_server")
    with open_store(server.url, timeout_s=2.0) as store:
        yield store


@pytest.mark.parametrize("check", contract.CHECKS, ids=lambda c: c.__name__[6:])
def test_blob_contract(space, check):
    check(space)


def test_objects_are_prefix_job_name_with_their_digest(s3_endpoint):
    space, job = s3_space(s3_endpoint, "layout"), contract.new_job()
    space.put_blob(job, "grad:0:1", b"abc")
    head = boto_client(s3_endpoint.settings).head_object(Bucket=s3_endpoint.bucket, Key=f"layout/{job}/grad:0:1")
    assert head["ContentLength"] == 3 and head["Metadata"] == {"sha256": hashlib.sha256(b"abc").hexdigest()}
    assert space.list_names(job) == ["grad:0:1"]


def test_delete_job_removes_only_that_jobs_objects(s3_endpoint):
    space, other_prefix = s3_space(s3_endpoint, "delete"), s3_space(s3_endpoint, "delete-other")
    job, neighbour = contract.new_job(), contract.new_job()
    for i in range(3):
        space.put_blob(job, f"grad:{i}", b"g" * i)
    space.put_blob(neighbour, "grad:0", b"n")
    space.put_blob(job + "0", "grad:0", b"extends the job id")
    other_prefix.put_blob(job, "grad:0", b"same job, other prefix")
    assert space.list_names(job) == ["grad:0", "grad:1", "grad:2"]
    assert space.delete_job(job) == 3
    assert space.list_names(job) == [] and space.get_blob(job, "grad:1") is None
    assert space.get_blob(neighbour, "grad:0") == b"n" and space.get_blob(job + "0", "grad:0") == b"extends the job id"
    assert other_prefix.get_blob(job, "grad:0") == b"same job, other prefix"
    assert space.delete_job(job) == 0


def test_many_objects_are_deleted_in_batches(s3_endpoint, monkeypatch):
    from faasgd.channels import s3

    monkeypatch.setattr(s3, "DELETE_BATCH", 4)
    space, job = s3_space(s3_endpoint, "batches"), contract.new_job()
    for i in range(10):
        space.put_blob(job, f"o:{i}", b"x")
    assert space.delete_job(job) == 10 and space.list_names(job) == []


@pytest.mark.parametrize("metadata, body, why", [({}, b"no digest", "no sha256 metadata"),
                                                 ({"sha256": "0" * 64}, b"wrong digest", "does not match its sha256")])
def test_a_foreign_or_changed_object_is_lost_state_not_data(s3_endpoint, metadata, body, why):
    space, job = s3_space(s3_endpoint, "torn"), contract.new_job()
    boto_client(s3_endpoint.settings).put_object(Bucket=s3_endpoint.bucket, Key=f"torn/{job}/model",
                                                 Body=body, Metadata=metadata)
    with pytest.raises(StateLost) as e:
        space.get_blob(job, "model")
    assert why in str(e.value) and "'model'" in str(e.value) and s3_endpoint.bucket in str(e.value)


def test_readers_see_the_old_object_or_the_new_one(s3_endpoint):
    space, job = s3_space(s3_endpoint, "overwrite"), contract.new_job()
    versions = [contract.payload(300_000, seed) for seed in (1, 2)]
    space.put_blob(job, "model", versions[0])
    stop, seen, errors = threading.Event(), [], []

    def write():
        i = 0
        while not stop.is_set():
            space.put_blob(job, "model", versions[i % 2])
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(20):
            data = space.get_blob(job, "model")
            seen.append(versions.index(data) if data in versions else errors.append(len(data)))
    finally:
        stop.set()
        writer.join(10)
    assert errors == [] and len(seen) == 20


def test_a_reader_never_sees_a_new_object_without_its_metadata(monkeypatch):
    """S3 makes an object visible with its metadata; moto stores it first and sets the metadata after, and a
    round reader once caught it between (the test server, faasgd.testing.moto_atomic, makes the PUT atomic). Here
    moto's gap is widened to 0.5 s and a reader asks for the object in the middle of it: it sees the whole
    object (or none), never one without its digest."""
    monkeypatch.setenv("FAASGD_MOTO_PUT_GAP_S", "0.5")
    server = start_s3()
    try:
        settings = settings_for(server)
        make_bucket(settings, "gap")
        space = S3Space(parse_s3_url("s3://gap/p"), settings, timeout_s=5.0)
        writer = threading.Thread(target=space.put_blob, args=("j", "round", b"the round's bytes"))
        writer.start()
        time.sleep(0.25)  # the PUT is inside moto's gap now
        asked = time.monotonic()
        assert space.get_blob("j", "round") in (None, b"the round's bytes")
        assert time.monotonic() - asked >= 0.1  # the read did land in the gap (it waited for the PUT)
        writer.join(10)
        assert space.get_blob("j", "round") == b"the round's bytes"
    finally:
        server.stop()


def test_settings_from_the_functions_secret_files(s3_endpoint, tmp_path):
    directory = s3_endpoint.write_secrets(tmp_path)
    space = open_s3(f"s3://{s3_endpoint.bucket}/from-secrets", {}, secrets_dir=directory)
    space.ping()
    job = contract.new_job()
    space.put_blob(job, "a", b"1")
    assert s3_space(s3_endpoint, "from-secrets").get_blob(job, "a") == b"1"


def test_wrong_keys_name_the_bucket_and_show_no_secret(s3_endpoint):
    good = s3_endpoint.settings
    for settings in (S3Settings(good.endpoint_url, good.region, good.access_key, "not-the-secret-key"),
                     S3Settings(good.endpoint_url, good.region, "AKIANOSUCHKEY0000000", good.secret_key)):
        space = S3Space(parse_s3_url(f"s3://{s3_endpoint.bucket}/denied"), settings)
        for call in (space.ping, lambda: space.put_blob("j", "a", b"x"), lambda: space.get_blob("j", "a")):
            with pytest.raises(StoreUnavailable) as e:
                call()
            text = str(e.value)
            assert f"bucket {s3_endpoint.bucket!r}" in text and "denied" in text
            assert good.secret_key not in text and settings.secret_key not in text and good.access_key not in text
    assert not [k for k in keys_in(good, s3_endpoint.bucket) if k.startswith("denied/")]


def test_a_missing_bucket_is_named(s3_endpoint):
    space = S3Space(parse_s3_url("s3://faasgd-no-such-bucket/p"), s3_endpoint.settings)
    for call in (space.ping, lambda: space.put_blob("j", "a", b"x"), lambda: space.get_blob("j", "a"),
                 lambda: space.delete_job("j")):
        with pytest.raises(StoreError) as e:
            call()
        assert "no bucket 'faasgd-no-such-bucket'" in str(e.value)
        assert s3_endpoint.settings.secret_key not in str(e.value)


def test_bad_input_writes_nothing(s3_endpoint):
    prefix = "hostile-" + uuid.uuid4().hex[:6]
    space = s3_space(s3_endpoint, prefix)
    for job_id, name in (("../x", "a"), ("..", "a"), ("j", ".."), ("j", "../../other/j/a"), ("j", "n" * 129),
                         ("j" * 65, "a"), ("j", "a/b")):
        with pytest.raises(ConfigError):
            space.put_blob(job_id, name, b"x")
    with pytest.raises(ConfigError):
        space.put_blob("j", "a", "not bytes")
    for url in ("s3://../x", f"s3://{s3_endpoint.bucket}/../x", f"s3://{s3_endpoint.bucket.upper()}"):
        with pytest.raises(ConfigError) as e:
            open_s3(url, {}, secrets_dir="/nonexistent")
        assert e.value.field == "s3_url"
    written = keys_in(s3_endpoint.settings, s3_endpoint.bucket)
    assert not [k for k in written if k.startswith((f"{prefix}/", "x", "other", "j/")) or ".." in k]


def test_a_stopped_server_is_unavailable_then_a_restarted_one_works():
    """Stop the process: StoreUnavailable naming the URL, quickly. Restart on the same port: moto starts empty,
    so the bucket is made again (a fresh bucket), and the same space works again without being reopened."""
    server = start_s3()
    try:
        settings = settings_for(server)
        make_bucket(settings, "faults")
        space = S3Space(parse_s3_url("s3://faults/p"), settings, timeout_s=1.0, max_attempts=2)
        space.put_blob("j", "a", b"before")
        server.stop()
        for call in (lambda: space.get_blob("j", "a"), lambda: space.put_blob("j", "a", b"x"), space.ping):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable) as e:
                call()
            assert time.monotonic() - started < 2 * (1.0 + 1.0) + 2.0  # attempts x timeouts + backoff
            assert f"s3://faults/p at {server.url}" in str(e.value) and "cannot connect" in str(e.value)
        server = start_s3(port=server.port)
        make_bucket(settings, "faults")
        assert space.get_blob("j", "a") is None  # moto keeps nothing across a restart
        space.put_blob("j", "a", b"after")
        assert space.get_blob("j", "a") == b"after"
    finally:
        server.stop()


def test_a_server_that_never_answers_is_a_timeout():
    """A socket that accepts connections and never answers: StoreTimeout within attempts x timeout (+ backoff)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind((LOOPBACK, free_port()))
        silent.listen(16)
        settings = S3Settings(f"http://{LOOPBACK}:{silent.getsockname()[1]}", "us-east-1", "k", "s")
        space = S3Space(parse_s3_url("s3://silent/p"), settings, timeout_s=0.5, max_attempts=2)
        started = time.monotonic()
        with pytest.raises(StoreTimeout) as e:
            space.get_blob("j", "a")
        elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 2 * 0.5 + 2.5 and "s3://silent/p" in str(e.value) and "0.5 s" in str(e.value)


def test_importing_the_channel_does_not_import_boto3():
    code = "import sys, faasgd.channels; print(sorted({'boto3', 'botocore'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
