"""The gateway's /system routes as a hostile caller meets them, in process (support/hostile_gateway.py):
without the login every path under /system is a 401 JSON with a challenge, whatever it would do (deploy,
remove, scale, write a secret) and whatever the path; a wrong login of any shape is the same; with the
login, a body or query out of bounds is refused naming what is wrong. After each, no replica was started,
stopped or called, nothing queued and no secret written.
"""

import json

import pytest

from support.fake_pods import LOGIN
from support.hostile_gateway import SETUP, TRAIN, TRAIN_IMAGE, basic, hostile_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
DEPLOY = json.dumps({"service": "copy", "image": TRAIN_IMAGE}).encode()
NESTED_ARRAYS = b"[" * 100_000 + b"]" * 100_000
NESTED_OBJECTS = b'{"a":' * 5000 + b"1" + b"}" * 5000  # under the 64 KiB of a scale or delete body


# Requests that would change something if let in: (method, path, body)
WITHOUT_LOGIN = [
    ("GET", "/system/functions", b""), ("GET", f"/system/function/{TRAIN}", b""), ("GET", "/system/info", b""),
    ("GET", "/system/namespaces", b""), ("GET", "/system/secrets", b""), ("GET", f"/system/logs?name={TRAIN}", b""),
    ("GET", "/system", b""), ("GET", "/system/", b""), ("GET", "/system/nope", b""), ("TRACE", "/system/functions", b""),
    ("POST", "/system/functions", DEPLOY), ("PUT", "/system/functions", json.dumps({"service": TRAIN,
                                                                                      "image": TRAIN_IMAGE}).encode()),
    ("DELETE", "/system/functions", json.dumps({"functionName": TRAIN}).encode()),
    ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": 5}'),
    ("POST", "/system/secrets", b'{"name": "planted", "value": "x"}'),
    ("DELETE", "/system/secrets", b'{"name": "basic-auth-password"}'),
]


@pytest.mark.parametrize("method, path, body", WITHOUT_LOGIN)
async def test_without_the_login_every_system_path_is_401_and_does_nothing(tmp_path, method, path, body):
    async with hostile_gateway(tmp_path) as door:
        answer = await door.refuses(401, "invalid credentials", door.send(method, path, body, login=False))
    assert answer.headers["www-authenticate"] == 'Basic realm="Restricted"'


BAD_LOGINS = {
    "scheme only": "Basic", "not base64": "Basic !!!", "no colon": "Basic " + "YWRtaW4=", "wrong password":
    basic("admin", "wrong"), "wrong user": basic("root", LOGIN[1]), "empty password": basic("admin", ""),
    "password prefix": basic("admin", LOGIN[1][:-1]), "password and more": basic("admin", LOGIN[1] + "x"),
    "a newline after": basic("admin", LOGIN[1] + "\n"), "bearer": f"Bearer {LOGIN[1]}", "the password alone":
    LOGIN[1], "user and password swapped": basic(LOGIN[1], "admin"),
}


@pytest.mark.parametrize("case", list(BAD_LOGINS))
async def test_a_wrong_login_of_any_shape_is_401_and_scales_nothing(tmp_path, case):
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(401, "invalid credentials", door.send(
            "POST", f"/system/scale-function/{TRAIN}", b'{"replicas": 5}', {"Authorization": BAD_LOGINS[case]},
            login=False))


# With the login: (method, path, body, status, words)
BAD_REQUESTS = {
    "deploy arrays 100k deep": ("POST", "/system/functions", NESTED_ARRAYS, 400, "nested too deeply"),
    "deploy objects 5000 deep": ("POST", "/system/functions", NESTED_OBJECTS, 400, "nested too deeply"),
    "update objects 5000 deep": ("PUT", "/system/functions", NESTED_OBJECTS, 400, "nested too deeply"),
    "deploy null": ("POST", "/system/functions", b"null", 400, "must be a JSON object"),
    "deploy a list": ("POST", "/system/functions", b"[]", 400, "must be a JSON object"),
    "deploy not JSON": ("POST", "/system/functions", b"{", 400, "failed to unmarshal"),
    "deploy not UTF-8": ("POST", "/system/functions", b"\xff", 400, "failed to unmarshal"),
    "deploy unknown field": ("POST", "/system/functions", b'{"service": "x", "image": "y", "hostPath": "/"}', 400,
                             "unknown field(s) hostPath"),
    "deploy a path as service": ("POST", "/system/functions", json.dumps({"service": "../evil", "image": TRAIN_IMAGE})
                                 .encode(), 400, "service: (../evil) is invalid"),
    "deploy a 64-letter service": ("POST", "/system/functions", json.dumps({"service": "a" * 64, "image": TRAIN_IMAGE})
                                   .encode(), 400, "is invalid"),
    "deploy no image": ("POST", "/system/functions", b'{"service": "copy"}', 400, "image: is required"),
    "deploy an image not built": ("POST", "/system/functions", b'{"service": "copy", "image": "evil/miner:1"}', 400,
                                  "image: evil/miner:1 is not built by this runtime"),
    "deploy envVars not strings": ("POST", "/system/functions", json.dumps({"service": "copy", "image": TRAIN_IMAGE,
                                   "envVars": {"a": 1}}).encode(), 400, "envVars: must be an object of strings"),
    "deploy scale.min 6": ("POST", "/system/functions", json.dumps({"service": "copy", "image": TRAIN_IMAGE, "labels": {
                           "com.openfaas.scale.min": "6"}}).encode(), 400, "set too high for Community Edition"),
    "deploy another namespace": ("POST", "/system/functions", json.dumps({"service": "copy", "image": TRAIN_IMAGE,
                                 "namespace": "kube-system"}).encode(), 400, "namespace must be: openfaas-fn"),
    "deploy what exists": ("POST", "/system/functions", json.dumps({"service": TRAIN, "image": TRAIN_IMAGE}).encode(),
                           409, TRAIN),
    "update what does not exist": ("PUT", "/system/functions", DEPLOY, 404, "copy"),
    "remove objects 5000 deep": ("DELETE", "/system/functions", NESTED_OBJECTS, 400, "must be a JSON object"),
    "remove null": ("DELETE", "/system/functions", b"null", 400, "functionName"),
    "remove no name": ("DELETE", "/system/functions", b'{"functionName": ""}', 400, "functionName"),
    "remove what does not exist": ("DELETE", "/system/functions", b'{"functionName": "nope"}', 404, "nope"),
    "remove in another namespace": ("DELETE", "/system/functions", json.dumps({"functionName": TRAIN, "namespace":
                                    "kube-system"}).encode(), 400, "namespace must be: openfaas-fn"),
    "scale objects 5000 deep": ("POST", f"/system/scale-function/{TRAIN}", NESTED_OBJECTS, 400, "must be a JSON object"),
    "scale null": ("POST", f"/system/scale-function/{TRAIN}", b"null", 400, "must be a JSON object"),
    "scale -1": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": -1}', 400, "replicas: must be a whole number"),
    "scale 1.5": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": 1.5}', 400, "replicas: must be a whole"),
    "scale a string": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": "5"}', 400, "replicas: must be"),
    "scale true": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": true}', 400, "replicas: must be"),
    "scale no count": ("POST", f"/system/scale-function/{TRAIN}", b'{"serviceName": "x"}', 400, "got nothing"),
    "scale unknown field": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": 2, "cpu": 8}', 400,
                            "unknown field(s) cpu"),
    "scale another namespace": ("POST", f"/system/scale-function/{TRAIN}", b'{"replicas": 2, "namespace": "x"}', 400,
                                "namespace: must be openfaas-fn"),
    "scale what does not exist": ("POST", "/system/scale-function/nope", b'{"replicas": 2}', 404, "nope"),
    "scale past 64 KiB": ("POST", f"/system/scale-function/{TRAIN}", b" " * (64 << 10) + b"{}", 413, "at most 65536"),
    "secret arrays 100k deep": ("POST", "/system/secrets", NESTED_ARRAYS, 400, "must be a JSON object"),
    "secret objects 5000 deep": ("PUT", "/system/secrets", NESTED_OBJECTS, 400, "must be a JSON object"),
    "secret remove 5000 deep": ("DELETE", "/system/secrets", NESTED_OBJECTS, 400, "must be a JSON object"),
    "secret a path as name": ("POST", "/system/secrets", b'{"name": "../evil", "value": "x"}', 422, "name: '../evil'"),
    "secret a long name": ("POST", "/system/secrets", json.dumps({"name": "a" * 254, "value": "x"}).encode(), 422,
                           "is not a valid secret name"),
    "secret the gateway's login": ("POST", "/system/secrets", b'{"name": "basic-auth-password", "value": "x"}', 409,
                                   "the gateway's own login"),
    "secret replace the login": ("PUT", "/system/secrets", b'{"name": "basic-auth-password", "value": "x"}', 404, ""),
    "secret value a number": ("POST", "/system/secrets", b'{"name": "s", "value": 5}', 400, "value: must be a string"),
    "secret rawValue not base64": ("POST", "/system/secrets", b'{"name": "s", "rawValue": "!!"}', 400,
                                   "rawValue: is not valid base64"),
    "secret unknown field": ("POST", "/system/secrets", b'{"name": "s", "value": "x", "path": "/etc"}', 400,
                             "unknown field(s) path"),
    "secret another namespace": ("POST", "/system/secrets?namespace=kube-system", b'{"name": "s", "value": "x"}', 400,
                                 "namespace must be: openfaas-fn"),
    "secret past 1 MiB": ("POST", "/system/secrets", json.dumps({"name": "s", "value": "x" * ((1 << 20) + 1)}).encode(),
                          422, "value: a secret holds at most"),
    "logs without a name": ("GET", "/system/logs", b"", 400, "name: the function whose logs"),
    "logs of nothing": ("GET", "/system/logs?name=nope", b"", 404, "function not found: nope"),
    "logs a path": ("GET", "/system/logs?name=../../etc/passwd", b"", 404, "function not found"),
    "logs tail words": ("GET", f"/system/logs?name={TRAIN}&tail=abc", b"", 422, "could not parse the log request"),
    "logs tail 5000 digits": ("GET", f"/system/logs?name={TRAIN}&tail=" + "9" * 5000, b"", 422, "could not parse"),
    "logs since words": ("GET", f"/system/logs?name={TRAIN}&since=yesterday", b"", 422, "could not parse"),
    "logs another namespace": ("GET", f"/system/logs?name={TRAIN}&namespace=kube-system", b"", 400, "namespace"),
    "list another namespace": ("GET", "/system/functions?namespace=kube-system", b"", 400, "namespace must be"),
    "describe nothing": ("GET", "/system/function/nope", b"", 404, "function not found: nope"),
    "describe a path": ("GET", "/system/function/..%2f..%2fetc", b"", 404, "not found: /system/function/../../etc"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
async def test_with_the_login_a_request_out_of_bounds_is_refused_and_changes_nothing(tmp_path, case):
    method, path, body, status, words = BAD_REQUESTS[case]
    async with hostile_gateway(tmp_path) as door:
        await door.refuses(status, words, door.send(method, path, body))


async def test_the_same_requests_with_good_values_do_change_things(tmp_path):
    """The tables above could pass on a gateway that changes nothing at all: this one must."""
    async with hostile_gateway(tmp_path) as door:
        before = door.snapshot()
        assert (await door.send("POST", f"/system/scale-function/{SETUP}", b'{"replicas": 2}')).status == 202
        assert (await door.send("POST", "/system/secrets", b'{"name": "planted", "value": "x"}')).status == 202
        after = door.snapshot()
    assert len(after[0]) == len(before[0]) + 1 and after[3] == [*before[3], "planted"]


async def test_a_password_in_a_deployed_url_is_never_answered(tmp_path):
    """/system/function(s) report envVars as deployed, but never a URL's password (it belongs in a secret)."""
    env = {"store_url": "redis://:s%2Fecret@redis:6379/0", "stores": "a=redis://u:s%2Fecret@h:1/1,b=memcached://m:1"}
    async with hostile_gateway(tmp_path) as door:
        body = json.dumps({"service": TRAIN, "image": TRAIN_IMAGE, "envVars": env}).encode()
        assert (await door.send("PUT", "/system/functions", body)).status == 202
        answers = [await door.send("GET", path) for path in ("/system/functions", f"/system/function/{TRAIN}")]
    assert all(b"s%2Fecret" not in a.body and b"s/ecret" not in a.body for a in answers)
    assert json.loads(answers[1].body)["envVars"] == {"store_url": "redis://:***@redis:6379/0",
                                                      "stores": "a=redis://u:***@h:1/1,b=memcached://m:1"}
