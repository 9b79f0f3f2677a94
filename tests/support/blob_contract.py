"""The blob-space contract: what every blob space meets, through put_blob and get_blob alone.

    put_blob(job_id, name, data: bytes) -> None      overwrites
    get_blob(job_id, name) -> bytes | None           None: absent

Plain functions `check_*(space)`, run over S3Space (moto) and over real Redis and Memcached ParameterStores
(tests/integration/test_s3_channel.py). Each check uses fresh job ids, so checks can share one server.
What is special to one backend (a chunk changed under its meta, an object without its digest) is tested
beside that backend, not here.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from faasgd.errors import ConfigError

SIZES = [0, 1, 7, (512 << 10) + 3, 5 << 20]  # empty, one byte, odd, just over a store chunk, 5 MB


def new_job() -> str:
    return "b-" + uuid.uuid4().hex[:12]


def payload(size: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).bytes(size)


def check_round_trip(space):
    job = new_job()
    for size in SIZES:
        data = payload(size, seed=size)
        space.put_blob(job, f"blob:{size}", data)
        assert space.get_blob(job, f"blob:{size}") == data
    for size in SIZES:  # each still whole after the others were written
        assert space.get_blob(job, f"blob:{size}") == payload(size, seed=size)


def check_overwrite(space):
    job, long, short = new_job(), payload(600_000, 1), payload(5, 2)
    space.put_blob(job, "model:0", long)
    space.put_blob(job, "model:0", short)
    assert space.get_blob(job, "model:0") == short
    space.put_blob(job, "model:0", long)
    assert space.get_blob(job, "model:0") == long
    space.put_blob(job, "model:0", b"")
    assert space.get_blob(job, "model:0") == b""


def check_absent_is_none(space):
    job = new_job()
    assert space.get_blob(job, "never-written") is None
    space.put_blob(job, "a", b"x")
    assert space.get_blob(job, "b") is None and space.get_blob(new_job(), "a") is None


def check_jobs_and_names_are_separate(space):
    one, two = new_job(), new_job()
    space.put_blob(one, "grad:1:0", b"one")
    space.put_blob(two, "grad:1:0", b"two")
    space.put_blob(one, "grad:1:1", b"one-1")
    space.put_blob(one + "0", "grad:1:0", b"prefix-of-another")  # a job id that extends another's
    assert [space.get_blob(one, "grad:1:0"), space.get_blob(two, "grad:1:0"), space.get_blob(one, "grad:1:1")] \
        == [b"one", b"two", b"one-1"]


HOSTILE = [("job_id", "../etc", "a"), ("job_id", "a/b", "a"), ("job_id", "", "a"), ("job_id", "j" * 65, "a"),
           ("job_id", None, "a"), ("name", "J", "../../x"), ("name", "J", "a/b"), ("name", "J", "n" * 129),
           ("name", "J", ""), ("name", "J", "a b"), ("name", "J", "\u00e9")]


def check_hostile_names_refused(space):
    """A bad job id or name is a ConfigError naming the field, on write and on read, and nothing is written."""
    job = new_job()
    for field, job_id, name in HOSTILE:
        job_id = job if job_id == "J" else job_id
        with pytest.raises(ConfigError) as e:
            space.put_blob(job_id, name, b"x")
        assert e.value.field == field, (job_id, name)
        with pytest.raises(ConfigError) as e:
            space.get_blob(job_id, name)
        assert e.value.field == field


def check_data_must_be_bytes(space):
    job = new_job()
    for bad in ("text", 3, None, [1, 2]):
        with pytest.raises(ConfigError) as e:
            space.put_blob(job, "a", bad)
        assert e.value.field == "data"
    assert space.get_blob(job, "a") is None


CHECKS = [check_round_trip, check_overwrite, check_absent_is_none, check_jobs_and_names_are_separate,
          check_hostile_names_refused, check_data_must_be_bytes]
