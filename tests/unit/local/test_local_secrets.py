"""/system/secrets over the runtime's secret files, and their projection into a replica's folder.
In-process (support.fake_pods); files in a temporary folder."""

from __future__ import annotations

import base64
import stat

import pytest

from faasgd.local.api import Refused
from faasgd.local.services.secrets import SecretStore
from support.fake_pods import system_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
VALUE = "v4lue-never-shown"


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_create_list_replace_remove_and_never_a_value_back(tmp_path):
    secrets = tmp_path / "secrets"
    async with system_gateway(tmp_path) as (gw, _, _):
        answers = [await gw.client.post("/system/secrets", json={"name": "api-key", "value": VALUE}),
                   await gw.client.post("/system/secrets", json={"name": "api-key", "value": VALUE}),
                   await gw.client.post("/system/secrets", json={"name": "raw.key", "rawValue": base64.b64encode(b"\0\1").decode(),
                                                                 "value": "ignored", "namespace": "openfaas-fn"})]
        listed = await gw.client.get("/system/secrets")
        answers.append(await gw.client.put("/system/secrets", json={"name": "api-key", "value": "v2-" + VALUE}))
        answers.append(await gw.client.put("/system/secrets", json={"name": "absent", "value": VALUE}))
        stored = (secrets / "api-key").read_text()
        answers += [await gw.client.request("DELETE", "/system/secrets", json={"name": "api-key"}),
                    await gw.client.request("DELETE", "/system/secrets", json={"name": "api-key"})]
    assert [a.status_code for a in answers] == [202, 409, 202, 202, 404, 202, 404]
    assert listed.json() == [{"name": "api-key", "namespace": "openfaas-fn"}, {"name": "raw.key", "namespace": "openfaas-fn"}]
    assert stored == "v2-" + VALUE and (secrets / "raw.key").read_bytes() == b"\0\1"
    assert mode(secrets / "raw.key") == 0o600 and mode(secrets) == 0o700
    assert not (secrets / "api-key").exists()
    assert not [a for a in answers + [listed] if VALUE.encode() in a.content]


@pytest.mark.parametrize("body, status, words", [
    ({"name": "../state.json", "value": "x"}, 422, "not a valid secret name"),
    ({"name": "UPPER", "value": "x"}, 422, "not a valid secret name"),
    ({"name": "", "value": "x"}, 422, "needs a name"),
    ({"name": "basic-auth-password", "value": "x"}, 409, "the gateway's own login"),
    ({"name": "ok", "value": "x", "namespace": "openfaas"}, 400, "namespace"),
    ({"name": "ok", "value": "x", "owner": "me"}, 400, "unknown field(s) owner"),
    ({"name": "ok", "rawValue": "not base64!"}, 400, "rawValue"),
])
async def test_bad_secrets_are_refused_naming_the_field_without_the_value(tmp_path, body, status, words):
    async with system_gateway(tmp_path) as (gw, _, _):
        response = await gw.client.post("/system/secrets", json=body)
    assert response.status_code == status and words in response.json()["error"]
    assert not (tmp_path / "state.json").exists()


async def test_the_gateways_login_is_not_listed_replaced_or_removed(tmp_path):
    store = SecretStore(tmp_path / "secrets")
    store.create("mine", b"x")
    (tmp_path / "secrets" / "basic-auth-user").write_text("admin")
    async with system_gateway(tmp_path) as (gw, _, _):
        listed = (await gw.client.get("/system/secrets")).json()
        replaced = await gw.client.put("/system/secrets", json={"name": "basic-auth-user", "value": "me"})
        removed = await gw.client.request("DELETE", "/system/secrets", json={"name": "basic-auth-user"})
    assert [s["name"] for s in listed] == ["mine"]
    assert replaced.status_code == removed.status_code == 404
    assert (tmp_path / "secrets" / "basic-auth-user").read_text() == "admin"


def test_a_replica_gets_copies_of_its_listed_secrets_only(tmp_path):
    store = SecretStore(tmp_path / "secrets")
    store.create("store-password", b"pw")
    store.create("unlisted", b"no")
    (tmp_path / "secrets" / "basic-auth-password").write_text("admin-pw")
    target = tmp_path / "replicas" / "r-1" / "secrets"
    target.mkdir(parents=True)
    (target / "stale").write_text("old")
    missing = store.project(("store-password", "basic-auth-password", "absent"), target)
    assert sorted(p.name for p in target.iterdir()) == ["store-password"]
    assert (target / "store-password").read_bytes() == b"pw" and mode(target / "store-password") == 0o600
    assert mode(target) == 0o700 and missing == ["basic-auth-password", "absent"]
    with pytest.raises(Refused) as refused:
        store.create("../escape", b"x")
    assert refused.value.http_status == 422 and not (tmp_path / "escape").exists()
