"""/system/functions, /system/function, /system/scale-function, /system/info and /system/namespaces,
in-process: the real Supervisor over fake pods (support.fake_pods), the gateway behind ASGITransport."""

from __future__ import annotations

import pytest

from support.fake_pods import system_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
TRAIN_IMAGE = "127.0.0.1:5000/emnist-train:0.1.0"


def deployment(service: str, image: str = TRAIN_IMAGE, **fields) -> dict:
    return {"service": service, "image": image, **fields}


async def test_describe_reports_what_was_deployed_with_created_at(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, _):
        status = (await gw.client.get("/system/function/emnist-train")).json()
        listed = {f["name"]: f for f in (await gw.client.get("/system/functions")).json()}
    assert status["image"] == TRAIN_IMAGE and status["namespace"] == "openfaas-fn"
    assert status["envVars"]["store_url"] == "redis://redis.openfaas-fn:6379/0"  # as deployed, not rewritten
    assert status["secrets"] == ["store-password"] and status["envProcess"] == "python index.py"
    assert status["labels"] == {"com.openfaas.scale.min": "2", "com.openfaas.scale.max": "5"}
    assert status["annotations"] == {"prometheus.io.scrape": "true", "prometheus.io.port": "8080",
                                     "prometheus.io.path": "/metrics"} and status["constraints"] == []
    assert status["limits"] == {"memory": "1Gi", "cpu": "1"} and status["requests"] == {"memory": "512Mi", "cpu": "500m"}
    assert status["createdAt"] == "2023-11-14T22:13:20.000000Z"
    assert status["replicas"] == status["availableReplicas"] == 2
    assert listed["emnist-train"]["createdAt"] == status["createdAt"] and "invocationCount" in listed["emnist-train"]


async def test_update_applies_the_deployment_and_replaces_the_replicas(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, pods):
        before = pods.running("emnist-train")
        body = deployment("emnist-train", envVars={"n_push": "5"}, secrets=["other"], labels={"team": "ml"},
                          annotations={"note": "x"}, limits={"memory": "2Gi"}, requests={"cpu": "250m"},
                          envProcess="python index.py")
        response = await gw.client.put("/system/functions", json=body)
        status = (await gw.client.get("/system/function/emnist-train")).json()
        updated = pods.running("emnist-train")
        await gw.client.put("/system/functions", json=deployment("emnist-train", labels={"com.openfaas.scale.min": "3"}))
        raised = (await gw.client.get("/system/function/emnist-train")).json()
    assert raised["replicas"] == 3  # an update with scale.min sets the count, as faas-netes' update
    assert response.status_code == 202 and response.content == b""
    assert status["envVars"] == {"n_push": "5"} and status["secrets"] == ["other"]
    assert status["labels"] == {"team": "ml"} and status["annotations"] == {"note": "x"}
    assert status["limits"] == {"memory": "2Gi"} and status["requests"] == {"cpu": "250m"}
    assert status["createdAt"] == "2023-11-14T22:13:20.000000Z"  # an update keeps the creation time
    assert status["replicas"] == 2  # no scale.min label: the count stays
    assert all(p.stopped for p in before) and [p.deployment.spec.environment for p in updated] == [{"n_push": "5"}] * 2
    after = pods.running("emnist-train")
    assert len(after) == 3 and {p.generation for p in after} == {3}
    assert after[0].deployment.spec.labels == {"com.openfaas.scale.min": "3"}


async def test_create_maps_the_image_to_its_stack_code(tmp_path):
    async with system_gateway(tmp_path) as (gw, supervisor, pods):
        absent = await gw.client.put("/system/functions", json=deployment("copy"))
        created = await gw.client.post("/system/functions", json=deployment("copy", labels={"com.openfaas.scale.min": "3"}))
        again = await gw.client.post("/system/functions", json=deployment("copy"))
        answer = await gw.client.post("/function/copy", content=b"hi")
        status = (await gw.client.get("/system/function/copy")).json()
    assert absent.status_code == 404 and "not found" in absent.json()["error"]  # faas-cli then POSTs
    assert created.status_code == 202 and again.status_code == 409
    assert status["replicas"] == 3 and status["image"] == TRAIN_IMAGE and status["envVars"] == {}
    assert supervisor.deployments["copy"].code.build_dir == tmp_path / "build" / "emnist-train"
    assert answer.status_code == 200 and answer.json()["replica"].startswith("copy-")
    assert len(pods.running("copy")) == 3


async def test_an_image_the_runtime_does_not_build_is_a_400_saying_how_to_add_it(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, _):
        for method in ("POST", "PUT"):
            response = await gw.client.request(method, "/system/functions",
                                               json=deployment("emnist-train" if method == "PUT" else "new",
                                                               image="docker.io/someone/else:1"))
            assert response.status_code == 400, response.text
            message = response.json()["error"]
            assert "docker.io/someone/else:1" in message and "add a function with this image" in message
            assert "emnist-train: 127.0.0.1:5000/emnist-train:0.1.0" in message


@pytest.mark.parametrize("body, words", [
    (b"{oops", "failed to unmarshal"),
    (b'{"service": "Bad_Name", "image": "x"}', "service: (Bad_Name) is invalid"),
    (b'{"image": "x"}', "service: is required"),
    (b'{"service": "ok"}', "image: is required"),
    (b'{"service": "ok", "image": "x", "labels": {"com.openfaas.scale.max": "6"}}', "scale.max is set too high"),
    (b'{"service": "ok", "image": "x", "labels": {"com.openfaas.scale.zero": "true"}}', "scale.zero not available"),
    (b'{"service": "ok", "image": "x", "namespace": "other"}', "namespace must be: openfaas-fn"),
    (b'{"service": "ok", "image": "x", "envVars": {"a": 1}}', "envVars: must be an object of strings"),
    (b'{"service": "ok", "image": "x", "limits": {"memory": "lots"}}', "limits.memory"),
    (b'{"service": "ok", "image": "x", "imagePullPolicy": "Always"}', "unknown field(s) imagePullPolicy"),
])
async def test_bad_deployments_are_400_naming_the_field(tmp_path, body, words):
    async with system_gateway(tmp_path) as (gw, _, _):
        response = await gw.client.post("/system/functions", content=body)
    assert response.status_code == 400 and words in response.json()["error"]


async def test_the_specs_deprecated_fields_are_ignored_and_logged_once_without_their_value(tmp_path, caplog,
                                                                                            monkeypatch):
    from faasgd.local import api

    monkeypatch.setattr(api, "_ignored_logged", set(), raising=False)  # a fresh "once"
    credential = "dXNlcjpzM2NyM3Q="  # base64 of user:s3cr3t, as ~/.docker/config.json keeps it
    deprecated = {"network": "func_functions", "registryAuth": credential}
    async with system_gateway(tmp_path) as (gw, _, pods):
        with caplog.at_level("WARNING", logger="faasgd.local.api"):
            updated = await gw.client.put("/system/functions", json=deployment(
                "emnist-train", envVars={"n_push": "5"}, **deprecated))
            created = await gw.client.post("/system/functions", json=deployment("copy", **deprecated))
            unknown = await gw.client.post("/system/functions", json=deployment("other", hostPath="/", **deprecated))
        status = (await gw.client.get("/system/function/emnist-train")).json()
    assert updated.status_code == 202 and created.status_code == 202, (updated.text, created.text)
    assert status["envVars"] == {"n_push": "5"} and "network" not in status and "registryAuth" not in status
    assert len(pods.running("copy")) == 1
    assert unknown.status_code == 400 and "unknown field(s) hostPath" in unknown.json()["error"]
    assert "network" not in unknown.json()["error"].split(";")[0]  # the deprecated ones are not called unknown
    logged = [r.getMessage() for r in caplog.records if r.name == "faasgd.local.api"]
    assert len(logged) == 2 and any("network" in m for m in logged) and any("registryAuth" in m for m in logged)
    assert credential not in caplog.text and "func_functions" not in caplog.text


async def test_remove_stops_the_replicas_and_a_second_remove_is_404(tmp_path):
    async with system_gateway(tmp_path) as (gw, _, pods):
        removed = await gw.client.request("DELETE", "/system/functions", json={"functionName": "emnist-setup"})
        again = await gw.client.request("DELETE", "/system/functions", json={"functionName": "emnist-setup"})
        bad = await gw.client.request("DELETE", "/system/functions", json={"name": "emnist-setup"})
        invoke = await gw.client.get("/function/emnist-setup")
        names = [f["name"] for f in (await gw.client.get("/system/functions")).json()]
    assert removed.status_code == 202 and again.status_code == 404 and bad.status_code == 400
    assert invoke.status_code == 404 and "emnist-setup" not in names and "emnist-train" in names
    assert pods.running("emnist-setup") == []


@pytest.mark.parametrize("asked, label_max, expected", [(9, "5", 5), (4, "2", 2), (0, "5", 1), (3, "5", 3)])
async def test_scale_is_clamped_to_one_and_scale_max_and_answered_202(tmp_path, asked, label_max, expected):
    async with system_gateway(tmp_path) as (gw, _, pods):
        await gw.client.put("/system/functions", json=deployment(
            "emnist-train", labels={"com.openfaas.scale.min": "2", "com.openfaas.scale.max": label_max}))
        response = await gw.client.post("/system/scale-function/emnist-train",
                                        json={"serviceName": "something-else", "replicas": asked})
        status = (await gw.client.get("/system/function/emnist-train")).json()
    assert response.status_code == 202 and response.json() == {"serviceName": "emnist-train", "replicas": expected}
    assert status["replicas"] == status["availableReplicas"] == expected == len(pods.running("emnist-train"))


async def test_info_has_a_sha_and_namespaces_is_openfaas_fn(tmp_path):
    async with system_gateway(tmp_path, version="1.2.3", sha="abc123") as (gw, _, _):
        info = (await gw.client.get("/system/info")).json()
        namespaces = await gw.client.get("/system/namespaces")
        other = await gw.client.get("/system/functions?namespace=kube-system")
    assert info["version"] == {"release": "1.2.3", "sha": "abc123"} == info["provider"]["version"]
    assert info["provider"]["orchestration"] == "processes" and info["arch"]
    assert namespaces.json() == ["openfaas-fn"]
    assert other.status_code == 400 and "openfaas-fn" in other.json()["error"]


def test_replicas_that_go_leave_the_routing_at_once_and_the_state_once_stopped(tmp_path):
    from support.fake_pods import FakePods, fake_supervisor

    pods, pending = FakePods(), []
    supervisor = fake_supervisor(tmp_path, pods)
    supervisor.background = pending.append  # the stops wait here until the test runs them
    first, second = pods.running("emnist-train")
    assert supervisor.scale("emnist-train", 1) == 1
    assert supervisor.replica_urls("emnist-train") == [first.url] and not second.stopped
    assert second.name in [p["name"] for p in supervisor.processes()]  # faasgd down would still find it
    pending.pop()()
    assert second.stopped and second.name not in [p["name"] for p in supervisor.processes()]
    supervisor.remove("emnist-train")
    assert supervisor.replica_urls("emnist-train") == [] and [p.name for p in supervisor.retiring] == [first.name]
