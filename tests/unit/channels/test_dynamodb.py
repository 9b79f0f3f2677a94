"""The DynamoDB channel without a server: settings and their errors, values split below the item limit, the
conditional put of merged slices, and the rounds' choice of merged slots (an in-memory client: support.fake_dynamodb)."""

from __future__ import annotations

import numpy as np
import pytest

from faasgd.channels import DynamoSettings, DynamoSpace, read_dynamodb_settings
from faasgd.channels.dynamodb import CHUNK_BYTES, READ_TRIES
from faasgd.errors import ConfigError, StateLost, StoreError
from faasgd.lambdaml.rounds import Exchange, ExchangeConfig, wire
from faasgd.lambdaml.rounds.exchange import merged_slots
from faasgd.store import open_store
from support.fake_dynamodb import ITEM_LIMIT, FakeDynamo, item_size

SECRET = "wJalr/XUtnFEMI+K7MDENG/bPxRfiCYSECRET"
ACCESS = "AKIAFAASGDTESTKEY01"
SETTINGS = DynamoSettings(None, "us-east-1", "faasgd-temp", "faasgd-merged", ACCESS, SECRET)


def secrets(tmp_path, **files) -> str:
    for name, value in files.items():
        (tmp_path / name.replace("_", "-")).write_text(value + "\n")
    return str(tmp_path)


def space_over(client: FakeDynamo) -> DynamoSpace:
    return DynamoSpace(SETTINGS, client=client)


def test_settings_from_secret_files_and_environment(tmp_path):
    directory = secrets(tmp_path, dynamodb_access_key=ACCESS, dynamodb_secret_key=SECRET,
                        dynamodb_endpoint="http://dynamodb.openfaas-fn:8000", dynamodb_region="eu-west-1")
    settings = read_dynamodb_settings({"dynamodb_temp_table": "lambdaml-tmp"}, directory)
    assert (settings.endpoint_url, settings.region, settings.temp_table, settings.merged_table) == \
        ("http://dynamodb.openfaas-fn:8000", "eu-west-1", "lambdaml-tmp", "faasgd-merged")
    env = {"dynamodb_endpoint_url": "http://127.0.0.1:9", "dynamodb_region": "us-west-2"}
    assert read_dynamodb_settings(env, directory).endpoint_url == "http://127.0.0.1:9"  # the environment wins
    assert SECRET not in repr(settings) and ACCESS not in repr(settings)


@pytest.mark.parametrize("env, files, field", [
    ({}, {"dynamodb_secret_key": SECRET}, "dynamodb-access-key"),
    ({}, {"dynamodb_access_key": ACCESS}, "dynamodb-secret-key"),
    ({"dynamodb_region": "EU West"}, None, "dynamodb_region"),
    ({"dynamodb_endpoint_url": f"http://{ACCESS}:{SECRET}@host:8000"}, None, "dynamodb_endpoint_url"),
    ({"dynamodb_endpoint_url": "ftp://host"}, None, "dynamodb_endpoint_url"),
    ({"dynamodb_temp_table": "a/b"}, None, "dynamodb_temp_table"),
    ({"dynamodb_merged_table": "x"}, None, "dynamodb_merged_table"),
    ({"dynamodb_temp_table": "same", "dynamodb_merged_table": "same"}, None, "dynamodb_merged_table"),
])
def test_bad_settings_name_their_field_and_never_a_secret(tmp_path, env, files, field):
    files = files if files is not None else {"dynamodb_access_key": ACCESS, "dynamodb_secret_key": SECRET}
    with pytest.raises(ConfigError) as e:
        read_dynamodb_settings(env, secrets(tmp_path, **files))
    assert e.value.field == field and SECRET not in str(e.value) and ACCESS not in str(e.value)


@pytest.mark.parametrize("job_id, name, field", [("../x", "a", "job_id"), ("j", "a/b", "name"), ("j", "", "name")])
def test_bad_names_are_refused_before_anything_is_sent(job_id, name, field):
    client = FakeDynamo()
    with pytest.raises(ConfigError) as e:
        space_over(client).put_blob(job_id, name, b"x")
    assert e.value.field == field and client.calls == []


def test_a_long_value_is_split_into_items_under_the_limit_and_read_back():
    client, data = FakeDynamo(), np.random.default_rng(0).bytes(3 * CHUNK_BYTES + 17)
    space = space_over(client)
    space.put_blob("j", "model", data)
    temp = client.tables["faasgd-temp"]
    assert len(temp) == 1 + 4 and "v" not in temp["j/model"]  # the object's item, then four chunks
    assert max(item_size(item) for item in temp.values()) <= ITEM_LIMIT
    puts = [key for op, key in client.calls if op == "put_item"]
    assert puts[-1] == "j/model"  # the chunks first: the object's item makes the value visible
    assert space.get_blob("j", "model") == data


def test_an_overwrite_removes_the_old_chunks():
    client = FakeDynamo()
    space = space_over(client)
    space.put_blob("j", "model", b"x" * (2 * CHUNK_BYTES))
    space.put_blob("j", "model", b"")
    assert list(client.tables["faasgd-temp"]) == ["j/model"] and space.get_blob("j", "model") == b""


def test_a_foreign_item_is_lost_state_and_an_overwrite_replaces_it():
    client = FakeDynamo()
    client.tables["faasgd-temp"]["j/model"] = {"k": {"S": "j/model"}, "v": {"B": b"not ours"}}
    space = space_over(client)
    with pytest.raises(StateLost) as e:
        space.get_blob("j", "model")
    assert "not a faasgd object" in str(e.value)
    space.put_blob("j", "model", b"ours")
    assert space.get_blob("j", "model") == b"ours"


def test_a_value_whose_chunks_keep_vanishing_is_lost_state_after_bounded_reads():
    client = FakeDynamo()
    space = space_over(client)
    space.put_blob("j", "model", b"y" * (CHUNK_BYTES + 1))
    for key in [k for k in client.tables["faasgd-temp"] if "#" in k]:
        del client.tables["faasgd-temp"][key]
    with pytest.raises(StateLost) as e:
        space.get_blob("j", "model")
    assert "chunks were gone" in str(e.value)
    assert sum(1 for op, key in client.calls if op == "get_item" and key == "j/model") == READ_TRIES


def test_put_merged_writes_once_under_attribute_not_exists_and_drops_a_late_writes_chunks():
    client = FakeDynamo()
    space = space_over(client)
    assert space.put_merged("j", "r:m0", b"first") is True
    assert space.put_merged("j", "r:m0", b"z" * (CHUNK_BYTES + 1)) is False
    assert list(client.tables["faasgd-merged"]) == ["j/r:m0"]  # the late write's chunk went
    assert space.get_merged("j", "r:m0") == b"first" and client.tables["faasgd-temp"] == {}
    space.clear_merged("j", "r:m0")
    assert space.get_merged("j", "r:m0") == b""


def test_a_missing_table_is_named_and_no_secret_shown():
    space = DynamoSpace(DynamoSettings(None, "us-east-1", "faasgd-temp", "gone", ACCESS, SECRET), client=FakeDynamo())
    with pytest.raises(StoreError) as e:
        space.ping()
    assert "gone" in str(e.value) and "no such table" in str(e.value) and SECRET not in str(e.value)


def test_the_rounds_use_a_spaces_own_merged_slots_else_its_objects():
    dynamo = space_over(FakeDynamo())
    assert merged_slots(dynamo) is dynamo
    store = open_store("memory://slots")
    assert merged_slots(store) is not store  # a plain blob space: merged slices are its ordinary objects


class LookedTooEarly(DynamoSpace):
    """Its first look for a merged slice finds none: the late entry looked before the first one wrote."""

    looked = False

    def get_merged(self, job_id, name):
        if not self.looked:
            self.looked = True
            return None
        return super().get_merged(job_id, name)


def test_a_late_merger_returns_the_merge_stored_first():
    """Worker 0 enters round 0 twice with different vectors (a re-invocation racing the first): the second entry,
    having looked before the first wrote, merges too; the condition refuses its write and it returns the stored
    merge."""
    client, config = FakeDynamo(), ExchangeConfig(workers=2, op="sum", poll_s=0.001, poll_max_s=0.001)
    theirs, piece = np.array([1.0, 2.0], np.float32), wire.Piece(wire.PART, 0, 1, 0, 1, 2, 0, 2)
    space_over(client).put_blob("j", piece.name("rounds"), wire.encode(piece, theirs))  # worker 1's contribution
    first, _ = Exchange(space_over(client), "j", 0, config).all_reduce(0, np.array([10.0, 10.0], np.float32))
    late = LookedTooEarly(SETTINGS, client=client)
    second, _ = Exchange(late, "j", 0, config).all_reduce(0, np.array([99.0, 99.0], np.float32))
    np.testing.assert_array_equal(first, [11.0, 12.0])
    np.testing.assert_array_equal(second, first)
    assert late.looked
