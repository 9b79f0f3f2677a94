"""`stores` in a function's environment: name=URL entries, where a URL may name several servers with commas."""

import pytest

from faasgd.errors import ConfigError
from faasgd.functions.settings import FunctionEnv, named_stores


def test_the_old_form_still_reads():
    assert named_stores("redis=redis://r.test:6379/0,memcached=memcached://m.test:11211") == {
        "redis": "redis://r.test:6379/0", "memcached": "memcached://m.test:11211"}


def test_a_url_of_several_servers_keeps_its_commas():
    text = ("redis=redis://r.test:6379/0, cluster=redis-cluster://c.test:6379,d.test:7000,"
            "pool=memcached://p0.test:11211,p1.test:11211,p2.test:11211")
    assert named_stores(text) == {"redis": "redis://r.test:6379/0",
                                  "cluster": "redis-cluster://c.test:6379,d.test:7000",
                                  "pool": "memcached://p0.test:11211,p1.test:11211,p2.test:11211"}


def test_a_multi_server_entry_may_come_first_or_last_and_empty_entries_are_skipped():
    assert named_stores(",pool=memcached://a.test:1,b.test:2,, redis=redis://r.test:1/0,") == {
        "pool": "memcached://a.test:1,b.test:2", "redis": "redis://r.test:1/0"}
    assert named_stores("") == {}


def test_a_request_picks_a_pool_by_name():
    env = FunctionEnv.read({"stores": "pool=memcached://a.test:1,b.test:2"})
    assert env.store_url_of("pool") == "memcached://a.test:1,b.test:2"


@pytest.mark.parametrize("text, said", [
    ("redis", "name=URL"),
    ("=redis://r.test:1/0", "no name"),
    ("r=ftp://x", "ftp"),
    ("pool=memcached://a.test:1,,b.test:2", "missing host"),
    ("pool=memcached://a.test:1,b.test:99999", "99999"),
    ("r=redis://a.test:1/0,r=redis://b.test:1/0", "twice"),
    ("Bad Name=redis://a.test:1/0", "Bad Name"),
])
def test_bad_entries_are_refused_naming_stores(text, said):
    with pytest.raises(ConfigError) as error:
        named_stores(text)
    assert error.value.field == "stores"
    assert said in str(error.value)


def test_a_password_in_an_entry_is_masked_in_the_error():
    with pytest.raises(ConfigError) as error:
        named_stores("c=redis-cluster://:s3cret@a.test:1,,b.test:2")
    assert "s3cret" not in str(error.value) and error.value.field == "stores"
