"""The gateway client (faasgd.openfaas) over an httpx mock transport, and the one poll loop on a fake clock."""

import json

import httpx
import pytest

from faasgd.errors import FaasgdError, GatewayError
from faasgd.openfaas import FunctionError, GatewayClient, json_answer, wait_for_job
from support.fake_clock import StepClock


def client(handler):
    return GatewayClient("http://gw.test:8080/", transport=httpx.MockTransport(handler))


def test_async_invocation_sends_json_and_the_callback_and_returns_the_call_id():
    seen = []

    def handler(request):
        seen.append(request)
        return httpx.Response(202, headers={"x-call-id": "abc"})

    assert client(handler).invoke_async("emnist-train", {"job_id": "j1"}, "http://cb.test/") == "abc"
    (request,) = seen
    assert request.method == "POST" and str(request.url) == "http://gw.test:8080/async-function/emnist-train"
    assert json.loads(request.content) == {"job_id": "j1"}
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["X-Callback-Url"] == "http://cb.test/"


def test_an_async_call_not_accepted_or_not_delivered_is_a_gateway_error():
    refused = client(lambda request: httpx.Response(404, json={"error": "function not found: nope"}))
    with pytest.raises(GatewayError) as error:
        refused.invoke_async("nope", {})
    assert "HTTP 404" in str(error.value) and "http://gw.test:8080" in str(error.value)

    def down(request):
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(GatewayError) as error:
        client(down).invoke("emnist-setup", {})
    assert error.value.http_status == 502 and "ConnectError" in str(error.value)


def test_answers_are_json_or_a_function_error_with_its_status_and_field():
    ok = client(lambda request: httpx.Response(200, json={"state": "done"})).invoke("emnist-setup", method="GET")
    assert json_answer(ok, "emnist-setup") == {"state": "done"}
    assert ok.headers["content-type"] == ok.headers["Content-Type"] == "application/json"  # any case
    bad = client(lambda r: httpx.Response(400, json={"error": "batch_size: ...", "field": "batch_size"})).invoke("x")
    with pytest.raises(FunctionError) as error:
        json_answer(bad, "x")
    assert error.value.http_status == 400 and error.value.field == "batch_size"
    html = client(lambda r: httpx.Response(502, text="<html>bad gateway</html>")).invoke("x")
    with pytest.raises(FunctionError) as error:
        json_answer(html, "x")
    assert error.value.http_status == 502 and "HTTP 502" in str(error.value)


def test_wait_for_job_reads_until_the_job_ends_and_shows_every_status():
    clock, states, shown = StepClock(), iter(["running", "running", "done"]), []
    status = wait_for_job(lambda: {"state": next(states)}, 60, poll_s=0.5, on_status=shown.append,
                          sleep=clock.sleep, clock=clock)
    assert status == {"state": "done"} and len(shown) == 3 and clock.waits == [0.5, 0.5]


def test_wait_for_job_returns_the_running_status_at_its_deadline_without_sleeping_past_it():
    clock = StepClock()
    status = wait_for_job(lambda: {"state": "running"}, 1.2, poll_s=0.5, sleep=clock.sleep, clock=clock)
    assert status["state"] == "running" and clock.now == pytest.approx(1001.2) and max(clock.waits) <= 0.5


def test_wait_for_replicas_until_all_are_available_or_a_named_error():
    clock, available = StepClock(), iter([0, 1, 2])

    def handler(request):
        return httpx.Response(200, json={"name": "emnist-train", "replicas": 2, "availableReplicas": next(available)})

    status = client(handler).wait_for_replicas("emnist-train", 2, 10, sleep=clock.sleep, clock=clock)
    assert status["availableReplicas"] == 2
    stuck = client(lambda r: httpx.Response(200, json={"replicas": 2, "availableReplicas": 1}))
    with pytest.raises(FaasgdError) as error:
        stuck.wait_for_replicas("emnist-train", 2, 3, sleep=clock.sleep, clock=clock)
    assert "1 of 2 replica(s) available after 3 s" in str(error.value)


def test_the_login_goes_to_system_routes_only():
    seen = []

    def handler(request):
        seen.append((request.url.path, request.headers.get("Authorization")))
        return httpx.Response(200, json={"replicas": 1, "availableReplicas": 1})

    gateway = GatewayClient("http://gw.test:8080", transport=httpx.MockTransport(handler), auth=("admin", "pw"))
    gateway.function_status("emnist-train")
    gateway.invoke("emnist-setup", {})
    assert seen == [("/system/function/emnist-train", "Basic YWRtaW46cHc="), ("/function/emnist-setup", None)]
    anonymous = client(handler)
    anonymous.function_status("emnist-train")
    assert seen[-1] == ("/system/function/emnist-train", None)


def test_scaling_takes_community_editions_empty_202_and_raises_on_an_error():
    client(lambda request: httpx.Response(202)).scale("emnist-train", 3)  # CE's answer: no body
    refused = client(lambda request: httpx.Response(400, json={"error": "replicas: bad", "field": "replicas"}))
    with pytest.raises(FunctionError) as error:
        refused.scale("emnist-train", -1)
    assert error.value.field == "replicas"
