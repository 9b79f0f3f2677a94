"""faasgd.api's jobs against a stand-in emnist-setup (httpx's MockTransport) and the memory store: a job is
submitted, followed and read; a job the store does not hold is an error that says where it was looked for
and how to name another store, from Python and from the command alike."""

import json

import httpx
import pytest

from faasgd import api
from faasgd.api import jobs, local_runtime
from faasgd.cli.main import main
from faasgd.config import load_config
from faasgd.errors import ConfigError, JobNotFound
from faasgd.functions import orchestrate
from faasgd.openfaas import GatewayClient
from faasgd.store import open_store

JOB = "j0123456789abcde"
STORES = "redis=redis://:secret@redis.test:6379/0,memcached=memcached://memcached.test:11211"


class FakeSetup:
    """emnist-setup behind a gateway: POST starts JOB, GET answers its status (running, then done) or 404."""

    def __init__(self, reads_running: int = 1):
        self.bodies, self.queries, self.reads_running = [], [], reads_running
        self.client = GatewayClient("http://gateway.test", transport=httpx.MockTransport(self.answer))

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/system/function/emnist-setup":
            return httpx.Response(200, json={"name": "emnist-setup", "envVars": {"stores": STORES}})
        query = dict(request.url.params)
        if request.method == "POST":
            self.bodies.append(json.loads(request.content))
            return httpx.Response(200, json={"job_id": JOB, "status_query": {"job_id": JOB}, "number_of_workers": 2,
                                             "dataset": "synthetic", "invocation_mode": "loop", "store": "default",
                                             "store_url": "redis://127.0.0.1:6379/0"})
        self.queries.append(query)
        if query["job_id"] != JOB or query.get("store"):
            return httpx.Response(404, json={"error": f"job_id: no job {query['job_id']!r} in the store",
                                             "field": "job_id"})
        self.reads_running -= 1
        state = "running" if self.reads_running >= 0 else "done"
        return httpx.Response(200, json={"job_id": JOB, "state": state, "workers": [],
                                         "result": {"job_id": JOB, "state": "done"} if state == "done" else None})


def test_a_submitted_job_is_followed_until_it_ends_and_gives_its_result():
    setup = FakeSetup(reads_running=2)
    job = api.submit(setup.client, api.request_body({"dataset": "synthetic"}, number_of_workers=2))
    assert setup.bodies == [{"dataset": "synthetic", "number_of_workers": 2}]
    assert job.job_id == JOB and job.info["invocation_mode"] == "loop"
    assert job.status()["state"] == "running"
    seen = []
    assert job.wait(timeout_s=5, on_status=seen.append, poll_s=0)["state"] == "done"
    assert [s["state"] for s in seen] == ["running", "done"]
    assert job.result(timeout_s=5) == {"job_id": JOB, "state": "done"}


def test_a_job_still_running_at_the_deadline_has_a_failed_result_saying_so():
    job = api.submit(FakeSetup(reads_running=10**6).client, {})
    assert job.wait(timeout_s=0.05, poll_s=0.01)["state"] == "running"
    final = job.result(timeout_s=0.05)
    assert final["state"] == "failed" and "no result after 0.05 s" in final["error"]


def test_an_unknown_job_through_the_gateway_names_the_store_looked_in_and_how_to_name_another():
    setup = FakeSetup()
    unknown = jobs.through_gateway(setup.client, {"job_id": "jffffffffffffff0"})
    with pytest.raises(JobNotFound) as error:
        unknown.status()
    message = str(error.value)
    assert error.value.field == "job_id" and "no job 'jffffffffffffff0'" in message
    assert "default store (its stores: default, redis, memcached)" in message
    assert "`faasgd status jffffffffffffff0 --store redis`" in message and "store='redis'" in message
    assert "secret" not in message and "redis.test" not in message  # store names only, never their locations
    with pytest.raises(JobNotFound) as error:
        jobs.through_gateway(setup.client, {"job_id": JOB, "store": "memcached"}).model_bytes()
    message = str(error.value)
    assert "the function's store 'memcached'" in message and "`faasgd model" in message
    assert "leave out --store for the default store (Python: store=None)" in message and "--store redis" in message


def test_an_unknown_job_in_a_store_names_that_store_and_the_flag_for_another():
    store = open_store("memory://api-unknown")
    with pytest.raises(JobNotFound) as error:
        jobs.in_store(store, "jffffffffffffff1").status()
    assert "the store memory://api-unknown" in str(error.value) and "--direct --store-url URL" in str(error.value)
    assert "store_url='URL'" in str(error.value)


def test_the_command_prints_the_next_step_for_a_job_on_another_store(monkeypatch, capsys):
    monkeypatch.setattr("faasgd.cli.status.gateway", lambda args: FakeSetup().client)
    assert main(["status", "jffffffffffffff2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no job 'jffffffffffffff2'" in err and "--store redis" in err


def test_train_checks_the_config_before_it_connects_or_sends(monkeypatch):
    def no_gateway(*args, **kwargs):
        raise AssertionError("a refused job reached a gateway")

    monkeypatch.setattr(jobs, "connect", no_gateway)
    with pytest.raises(ConfigError) as error:
        api.train(dataset="synthetic", n_push=0)
    assert error.value.field == "n_push"
    with pytest.raises(ConfigError) as error:
        api.train({"store_url": "redis://elsewhere:6379/0"})
    assert error.value.field == "store_url"  # a store's location is the function's own configuration


def test_train_sends_the_config_and_keywords_to_the_gateway_it_finds(monkeypatch):
    setup = FakeSetup()
    monkeypatch.setattr(jobs, "connect", lambda gateway, directory: setup.client)
    job = api.train({"dataset": "synthetic", "hidden_sizes": [32]}, number_of_workers=3)
    assert job.job_id == JOB and setup.bodies == [{"dataset": "synthetic", "hidden_sizes": [32], "number_of_workers": 3}]


def test_a_train_config_becomes_a_request_body_without_store_locations():
    config = load_config({}, {"dataset": "synthetic", "hidden_sizes": [8, 4], "store_url": "redis://h:6379/1"})
    body = api.request_body(config, max_epochs=2)
    assert "store_url" not in body and "local_store_url" not in body
    assert body["hidden_sizes"] == [8, 4] and body["max_epochs"] == 2 and body["dataset"] == "synthetic"
    with pytest.raises(ConfigError) as error:
        api.request_body(["dataset", "synthetic"])
    assert error.value.field == "config"


def test_no_gateway_anywhere_says_how_to_start_or_name_one(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    with pytest.raises(ConfigError) as error:
        local_runtime.gateway_url(None, str(tmp_path / ".faasgd"))
    assert error.value.field == "gateway"
    assert "faasgd.api.start_runtime()" in str(error.value) and "gateway=URL" in str(error.value)
    monkeypatch.setenv("OPENFAAS_URL", "http://cluster.test:8080")
    assert local_runtime.gateway_url(None, str(tmp_path)) == "http://cluster.test:8080"
    assert local_runtime.gateway_url("http://named.test", str(tmp_path)) == "http://named.test"


def test_a_job_is_named_by_a_store_name_or_a_store_url_never_both():
    with pytest.raises(ConfigError) as error:
        api.job(JOB, store="redis", store_url="memory://x")
    assert error.value.field == "store"
    with pytest.raises(ConfigError) as error:
        api.job(JOB, store="redis://h:6379/0")
    assert error.value.field == "store"
    with pytest.raises(ConfigError) as error:
        api.job("../etc")
    assert error.value.field == "job_id"


def test_a_job_read_from_its_store_gives_its_model_and_result(tmp_path):
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "test_samples": 200, "hidden_sizes": [8],
                              "max_epochs": 2, "invocation_mode": "single", "number_of_workers": 1,
                              "target_accuracy": 1.0, "store_url": "memory://api-store-job"})
    store = open_store(config.store_url)
    job_id = orchestrate.create_job(store, config)
    orchestrate.run_single(store, config, job_id)
    job = api.job(job_id, store_url=config.store_url)
    final = job.result(timeout_s=5)
    assert final["state"] == "done" and final["job_id"] == job_id
    model = api.load_model(job)
    assert model.job_id == job_id and model.source == "final" and model.test_accuracy == final["final_test_accuracy"]
    saved = api.save_model(job, tmp_path / "m.npz")
    assert saved.version == model.version and api.load_model(tmp_path / "m.npz").params.tolist() == model.params.tolist()
    answer = api.evaluate(tmp_path / "m.npz")
    assert answer["test_accuracy"] == answer["reported_test_accuracy"] == final["final_test_accuracy"]
    frame = api.results(job, as_frame=True)
    assert list(frame["job_id"]) == [job_id] and frame.loc[0, "samples"] == final["samples"]


def test_a_jobs_wait_through_the_gateway_asks_emnist_setup_to_wait_its_period_in_a_form_it_accepts():
    from faasgd.functions.emnist_setup import status_wait

    setup = FakeSetup(reads_running=1)
    timeouts = []
    send = setup.client._http.send

    def noting(request, **kwargs):
        timeouts.append(request.extensions["timeout"]["read"])
        return send(request, **kwargs)

    setup.client._http.send = noting
    job = api.submit(setup.client, {})
    timeouts.clear()
    assert job.wait(timeout_s=30, poll_s=0.5)["state"] == "done"
    reads = [q for q in setup.queries if "wait" in q]
    assert [q["wait"] for q in reads] == ["0.500", "0.500"] and status_wait(reads[0]) == 0.5
    assert all(t >= 10.5 for t in timeouts)  # the client's own timeout leaves room for the wait


class OldSetup(FakeSetup):
    """emnist-setup from before `wait`: it refuses the parameter as unknown (400 naming it)."""

    def answer(self, request):
        if request.method == "GET" and "wait" in request.url.params:
            self.queries.append(dict(request.url.params))
            return httpx.Response(400, json={"error": "wait: unknown query parameter", "field": "wait"})
        return super().answer(request)


def test_a_jobs_wait_against_an_emnist_setup_without_wait_falls_back_to_plain_reads():
    setup = OldSetup(reads_running=2)
    job = api.submit(setup.client, {})
    assert job.wait(timeout_s=5, poll_s=0.01)["state"] == "done"
    assert ["wait" in q for q in setup.queries] == [True, False, False, False]  # refused once, then plain reads
