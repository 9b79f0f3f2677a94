"""Every key a job writes carries the job's expiry (store/expiry.py), on the memory store and fakeredis.

Real Redis and Memcached: tests/integration/test_expiry_real.py.
"""

import uuid

import fakeredis
import numpy as np
import pytest

from faasgd.config import load_config
from faasgd.errors import ConfigError, JobNotFound
from faasgd.store import keys, open_store
from faasgd.store.expiry import DEFAULT_KEEP_S, MAX_KEEP_S
from faasgd.store.memory_store import MemorySpace
from faasgd.store.node_local import NodeLocalStore
from support.expiry_keys import memory_ttls, missing_kinds, write_every_kind
from support.fake_clock import StepClock


def memory_store(clock=None):
    return open_store(f"memory://expiry-{uuid.uuid4().hex[:8]}", client=MemorySpace(clock or StepClock()))


def fakeredis_ttls(store, job_id):
    found = {}
    for key in store.client.scan_iter(match=keys.job_prefix(job_id) + "*"):
        left = store.client.pttl(key)
        found[key.decode()] = None if left == -1 else left / 1000
    return found


@pytest.mark.parametrize("backend", ["memory", "fakeredis"])
def test_every_key_of_a_job_expires_within_keep_s(backend):
    if backend == "memory":
        store, ttls = memory_store(), memory_ttls
    else:
        store, ttls = open_store("redis://127.0.0.1:6379/0", client=fakeredis.FakeRedis()), fakeredis_ttls
    write_every_kind(store, "job-a", keep_s=60)
    found = ttls(store, "job-a")
    assert missing_kinds(found, "job-a") == [], sorted(found)  # the listing sees every kind written
    lasting = {key: left for key, left in found.items() if left is None or not 0 < left <= 60}
    assert lasting == {}  # none without an expiry, none beyond keep_s (the lease's longer ttl_s capped)


def test_a_job_is_gone_keep_s_after_its_last_write_and_each_write_pushes_it_on():
    clock = StepClock()
    store = memory_store(clock)
    write_every_kind(store, "job-b", keep_s=5)
    clock.sleep(4)
    store.put_record("job-b", keys.RESULT, {"state": "done"})  # written last: lives 5 s from here
    clock.sleep(1.5)
    assert list(memory_ttls(store, "job-b")) == [keys.record("job-b", keys.RESULT)]
    assert store.get_record("job-b", keys.RESULT) == {"state": "done"}
    with pytest.raises(JobNotFound):
        store.get_weights("job-b")
    assert store.events("job-b") == [] and store.read_counter("job-b", keys.CONFLICTS) == 0
    clock.sleep(4)
    assert memory_ttls(store, "job-b") == {}


@pytest.mark.parametrize("bad", [0, -1, MAX_KEEP_S + 1, 1.5, True, "60", None])
def test_a_bad_keep_s_is_refused_naming_the_field_and_nothing_is_written(bad):
    store = memory_store()
    with pytest.raises(ConfigError) as error:
        store.keep("job-c", bad)
    assert error.value.field == "keep_s"
    with pytest.raises(ConfigError) as error:
        store.put_record("job-c", keys.CONFIG, {"keep_s": bad})
    assert error.value.field == "keep_s"
    assert memory_ttls(store, "job-c") == {}
    if not isinstance(bad, str) and bad is not None:  # a config also reads "60" as text, and null as unset
        with pytest.raises(ConfigError) as error:
            load_config({}, {"keep_s": bad})
        assert error.value.field == "keep_s"


@pytest.mark.parametrize("settings", [{"keep_s": 2}, {"keep_s": 239}, {"keep_s": 9, "start_timeout_s": 5}])
def test_a_keep_s_shorter_than_the_workers_start_is_refused_naming_both_fields(settings):
    """A worker may start start_timeout_s after the setup wrote the job and renews its keys only a quarter of
    keep_s after its own first write: a keep_s under 2 x start_timeout_s (120 s by default) would let them expire."""
    with pytest.raises(ConfigError) as error:
        load_config({}, settings)
    assert error.value.field == "keep_s"
    assert "start_timeout_s" in str(error.value) and f"keep_s {settings['keep_s']}" in str(error.value)
    assert f"{2 * settings.get('start_timeout_s', 120)} s" in str(error.value)
    with pytest.raises(ConfigError) as error:  # the function's environment sets start_timeout_s, a body keep_s
        load_config({"start_timeout_s": "300"}, {"keep_s": 599})
    assert error.value.field == "keep_s"


@pytest.mark.parametrize("settings", [{"keep_s": 240}, {"keep_s": 2, "start_timeout_s": 1}, {"keep_s": 10, "start_timeout_s": 5}])
def test_a_keep_s_of_twice_start_timeout_s_or_more_is_accepted(settings):
    assert load_config({}, settings).keep_s == settings["keep_s"]


def test_the_store_learns_keep_s_from_the_config_record_else_keeps_the_default():
    space = MemorySpace(StepClock())
    writer, other = (open_store("memory://learn", client=space) for _ in range(2))
    writer.put_record("job-d", keys.CONFIG, {"keep_s": 90})  # as a job's creator writes it
    assert writer.keep_s_of("job-d") == 90
    other.put_record("job-d", keys.progress_name(0), {"pushes": 0})  # a warm replica's store, told nothing
    assert other.keep_s_of("job-d") == 90
    assert memory_ttls(other, "job-d")[keys.worker("job-d", 0)] == 90
    other.append_event("job-e", {"event": "after a restart"})  # no config at all: still an expiry
    assert memory_ttls(other, "job-e") == {keys.events("job-e"): DEFAULT_KEEP_S}


def test_a_ttl_shorter_than_keep_s_is_kept():
    store = memory_store()
    store.keep("job-f", 60)
    store.put_record("job-f", keys.heartbeat_name(0), {"at": 1}, ttl_s=5)
    assert memory_ttls(store, "job-f") == {keys.record("job-f", keys.heartbeat_name(0)): 5}


def test_created_jobs_carry_their_configs_keep_s():
    from faasgd import job

    store = memory_store()
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "test_samples": 100,
                              "hidden_sizes": [8], "number_of_workers": 2, "keep_s": 120, "start_timeout_s": 60})
    job_id = job.create_job(store, config)
    found = memory_ttls(store, job_id)
    assert missing_kinds(found, job_id, ("w:meta", "w:version", "w:0", "r:config", "r:job", "events")) == []
    assert set(found.values()) == {120}


def test_the_node_cache_copy_expires_like_the_job():
    tag = uuid.uuid4().hex[:8]
    global_store, cache = open_store(f"memory://g{tag}"), open_store(f"memory://l{tag}")
    global_store.keep("job-g", 45)
    global_store.set_weights("job-g", np.zeros(4, np.float32))
    view = NodeLocalStore(global_store, f"memory://l{tag}", refresh_s=3600)
    try:
        view.get_weights("job-g")  # seeds the cache
        assert view.refresh("job-g") is True
        found = memory_ttls(cache, "job-g")
        assert missing_kinds(found, "job-g", ("w:meta", "w:version", "w:0", "r:cache-refresh")) == []
        assert all(left is not None and 0 < left <= 45 for left in found.values()), found
    finally:
        view.close()



def test_a_job_written_to_keeps_its_lasting_keys_past_keep_s_and_loses_them_once_idle():
    clock = StepClock()
    store = memory_store(clock)
    store.renew_clock = clock
    write_every_kind(store, "job-h", keep_s=8)
    written_once = memory_ttls(store, "job-h")
    for _ in range(30):  # 30 s of a running job's heartbeats, nothing else written
        clock.sleep(1)
        store.put_record("job-h", keys.heartbeat_name(0), {"at": clock()}, ttl_s=5)
    left = memory_ttls(store, "job-h")
    lasting = [keys.record("job-h", keys.CONFIG), keys.weights_meta("job-h"), keys.weights_version("job-h"),
               keys.weights_chunk("job-h", 0), keys.worker("job-h", 0), keys.events("job-h"),
               keys.counter("job-h", keys.CONFLICTS),
               keys.model_meta("job-h", keys.LAST_PARAMS_COPY),
               keys.model_chunks("job-h", keys.LAST_PARAMS_COPY, 1)[0]]
    assert [key for key in lasting if key not in left] == []
    assert store.get_weights("job-h")[1] == 2 and store.read_copy("job-h", keys.LAST_PARAMS_COPY) is not None
    gone = sorted(set(written_once) - set(left))  # not renewed: they lived keep_s past their own write
    assert gone and all(":b:" in key or ":r:lease:" in key for key in gone), gone  # blobs, the lease
    clock.sleep(8.5)
    assert memory_ttls(store, "job-h") == {}


def test_renewal_is_due_a_quarter_of_keep_s_after_a_store_objects_first_write():
    clock = StepClock()
    store = memory_store(clock)
    store.renew_clock = clock
    touched = []
    store._touch = lambda names, ttl_s: touched.append((len(names), ttl_s))
    store.keep("job-i", 40)
    store.put_record("job-i", keys.CONFIG, {"keep_s": 40})
    clock.sleep(9.9)
    store.put_record("job-i", keys.heartbeat_name(0), {}, ttl_s=5)
    assert touched == []
    clock.sleep(0.1)
    store.put_record("job-i", keys.heartbeat_name(0), {}, ttl_s=5)
    assert len(touched) == 1 and touched[0][1] == 40
    store.put_record("job-i", keys.heartbeat_name(0), {}, ttl_s=5)
    assert len(touched) == 1  # the next is due 10 s on


def test_a_store_object_remembers_a_bounded_number_of_jobs_and_reads_a_forgotten_ones_config_again(monkeypatch):
    from faasgd.store import expiry

    monkeypatch.setattr(expiry, "MAX_KEPT_JOBS", 3)
    store = memory_store()
    for i in range(5):
        store.put_record(f"job-{i}", keys.CONFIG, {"keep_s": 100 + i})
    assert list(store._keep_by_job) == ["job-2", "job-3", "job-4"]
    assert store.keep_s_of("job-0") == 100  # read from its config record again


def test_a_renewal_on_redis_gives_a_key_left_without_expiry_one_and_leaves_a_pushs_watch_alone():
    import redis

    clock = StepClock()
    store = open_store("redis://127.0.0.1:6379/0", client=fakeredis.FakeRedis())
    store.renew_clock = clock
    store.keep("job-j", 40)
    store.set_weights("job-j", np.zeros(4, np.float32))
    store.put_record("job-j", keys.JOB, {})
    store.client.set(keys.record("job-j", keys.DONE), b"{}")  # a writer that forgot the expiry
    store.client.expire(keys.record("job-j", keys.JOB), 5)  # a key close to its end
    with store.client.pipeline(transaction=True) as push:
        push.watch(keys.weights_version("job-j"))  # a push in flight, as redis_store's
        clock.sleep(10)
        store.put_record("job-j", keys.heartbeat_name(0), {}, ttl_s=5)  # due: the lasting keys are renewed
        push.multi()
        push.incr(keys.weights_version("job-j"))
        try:
            push.execute()
        except redis.WatchError:
            pytest.fail("the renewal broke a push's WATCH on the version (it had more than half of keep_s left)")
    found = fakeredis_ttls(store, "job-j")
    assert 39 < found[keys.record("job-j", keys.DONE)] <= 40 and 39 < found[keys.record("job-j", keys.JOB)] <= 40


def test_a_stacking_job_learns_its_keep_s_from_the_config_it_writes_first():
    from faasgd.stacking import records
    from faasgd.stacking.config import load_stacking

    store = memory_store()
    job_id = records.create_job(store, load_stacking({}, {"keep_s": 77}))
    store.put_blob(job_id, keys.DATASET_OBJECT, b"rows")
    found = memory_ttls(store, job_id)
    assert missing_kinds(found, job_id, ("r:config", "r:state", "b:dataset")) == []
    assert set(found.values()) == {77}
