"""Spans of whole jobs run in process (SDK's InMemorySpanExporter): one tree per job with the right parents.

The functions' handlers are called as the template's index.py calls them: inside `tracing.incoming` of the
call's headers, so a train call continues the trace its fan-out (or chained) call's traceparent names.
"""

import uuid

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from faasgd import tracing
from faasgd.errors import ConfigError
from faasgd.functions import replica_cache
from faasgd.openfaas import GatewayClient
from faasgd.store import open_store
from faasgd.tracing import setup, tree
from support.fake_gateway import FakeGateway
from support.handlers import FakeEvent, load_handler
from support.stacking_drive import SMALL

setup_handler = load_handler("emnist-setup")
train_handler = load_handler("emnist-train")


@pytest.fixture
def spans(monkeypatch):
    """Every span the core starts goes to an in-memory exporter (no global provider is set)."""
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "tracer", lambda: provider.get_tracer("faasgd"))
    return exporter


@pytest.fixture
def env(monkeypatch):
    url = f"memory://t{uuid.uuid4().hex[:10]}"
    values = {"store_url": url, "dataset": "synthetic", "train_samples": "600", "test_samples": "200",
              "hidden_sizes": "8", "batch_size": "60", "max_epochs": "2", "target_accuracy": "1.0",
              "number_of_workers": "2", "gateway_url": "http://127.0.0.1:9", "stores": ""}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    replica_cache.keep_store(url, open_store(url))
    yield FakeGateway().install(monkeypatch)
    replica_cache.forget()


def handle(handler, event):
    with tracing.incoming(event.headers):  # what index.py's run_handler does
        return handler.handle(event, None)


def by_id(finished):
    return {s.context.span_id: s for s in finished}


def parent_of(span, index):
    return index.get(span.parent.span_id) if span.parent is not None else None


def run_job(gateway, body):
    job_id = handle(setup_handler, FakeEvent("POST", body))["body"]["job_id"]
    pending = gateway.take()
    while pending:
        call = pending.pop(0)
        handle(train_handler, FakeEvent("POST", call.payload, {**call.headers, "X-Call-Id": call.call_id}))
        pending += gateway.take()
    return job_id


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_a_two_worker_job_is_one_tree_setup_calls_trains_store(spans, env, mode):
    job_id = run_job(env, {"invocation_mode": mode})
    finished = spans.get_finished_spans()
    index = by_id(finished)
    assert len({s.context.trace_id for s in finished}) == 1  # one trace for the whole job
    roots = [s for s in finished if s.parent is None]
    assert [r.name for r in roots] == ["setup"] and roots[0].attributes["faasgd.job_id"] == job_id
    trains = [s for s in finished if s.name == "train"]
    assert sorted((s.attributes["faasgd.worker_id"], s.attributes["faasgd.iteration"]) for s in trains) == \
        ([(0, 0), (1, 0)] if mode == "loop" else [(0, 0), (0, 1), (1, 0), (1, 1)])
    for train in trains:  # each train call continues the call span that invoked it
        call = parent_of(train, index)
        assert call.name == "call emnist-train" and call.attributes["faasgd.asynchronous"] is True
        assert train.attributes["faasgd.job_id"] == job_id
        caller = parent_of(call, index)
        if train.attributes["faasgd.iteration"] == 0:
            assert caller.name == "setup"  # the fan-out
        else:  # chained by the previous iteration of the same worker
            assert caller.name == "train" and caller.attributes["faasgd.worker_id"] == train.attributes["faasgd.worker_id"]
            assert caller.attributes["faasgd.iteration"] == train.attributes["faasgd.iteration"] - 1
        stores = [s for s in finished if s.parent is not None and s.parent.span_id == train.context.span_id
                  and s.name.startswith("store.")]
        names = {s.name for s in stores}
        assert {"store.fetch", "store.push_update", "store.update_worker"} <= names, names
    fanned = [s for s in finished if s.name == "call emnist-train" and parent_of(s, index).name == "setup"]
    assert len(fanned) == 2
    # No store span outside a train (or setup) call; none per chunk: the memory store's chunks are not spans
    assert all(parent_of(s, index).name == "train" for s in finished if s.name.startswith("store."))


def test_the_tree_read_back_from_the_file_exporter_shows_the_job(spans, env, tmp_path):
    from faasgd.tracing.file_exporter import FileSpanExporter

    job_id = run_job(env, {})
    exporter = FileSpanExporter(str(tmp_path))
    exporter.export(spans.get_finished_spans())
    exporter.shutdown()
    roots = tree.job_trees(tree.read_spans(tmp_path), job_id)
    assert [r.span["name"] for r in roots] == ["setup"]
    assert [c.span["name"] for c in roots[0].children] == ["call emnist-train"] * 2
    assert [g.span["name"] for c in roots[0].children for g in c.children] == ["train", "train"]
    lines = tree.render(roots)
    assert lines[0].startswith("setup") and any(line.startswith("    train") for line in lines)
    assert tree.job_trees(tree.read_spans(tmp_path), "jnosuchjob000000") == []


def test_no_sdk_means_no_wrapper_and_the_caller_context_still_passes_on(env):
    store = open_store("memory://plain")
    assert tracing.traced_store(store) is store  # nothing recorded: the store itself
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with tracing.incoming({"Traceparent": parent}):
        assert tracing.inject({})["traceparent"] == parent  # the API's no-op tracer keeps the incoming context


def stacking_gateway(store_url, driven):
    """A sync gateway that runs the called stacking function's handler, with the request's headers."""
    handlers = {name: load_handler(name) for name in ("stacking-trainer", "stacking-reducer", "stacking-metatrainer")}

    def call(request: httpx.Request) -> httpx.Response:
        function = request.url.path.rsplit("/", 1)[-1]
        driven.append(dict(request.headers))
        event = FakeEvent("POST", request.content, dict(request.headers))
        answer = handle(handlers[function], event)
        return httpx.Response(answer["statusCode"], json=answer["body"])

    return GatewayClient("http://gateway.test:8080", transport=httpx.MockTransport(call))


def test_a_stacking_job_is_one_tree_driver_calls_trainers_reducer_metatrainer(spans, monkeypatch):
    url = "redis://store.test:6379/0"
    monkeypatch.setenv("store_url", url)
    monkeypatch.setenv("stores", "")
    replica_cache.keep_store(url, open_store(f"memory://st{uuid.uuid4().hex[:8]}"))
    driven = []
    monkeypatch.setattr(replica_cache, "gateway_for", lambda _: stacking_gateway(url, driven))
    try:
        body = {**SMALL, "trainers_num": 2, "concurrent_training": "true", "transfer": "store", "models": "Lasso,LinearSVR"}
        answer = handle(load_handler("stacking-driver"), FakeEvent("POST", body))
    finally:
        replica_cache.forget()
    assert answer["statusCode"] == 200
    finished = spans.get_finished_spans()
    index = by_id(finished)
    assert all("traceparent" in headers for headers in driven) and len(driven) == 4
    assert len({s.context.trace_id for s in finished}) == 1
    driver = [s for s in finished if s.parent is None]
    assert [d.name for d in driver] == ["stacking.driver"]
    assert driver[0].attributes["faasgd.job_id"] == answer["body"]["job_id"]
    workers = [s for s in finished if s.name in ("stacking.trainer", "stacking.reducer", "stacking.metatrainer")]
    assert sorted(s.name for s in workers) == ["stacking.metatrainer", "stacking.reducer", "stacking.trainer",
                                               "stacking.trainer"]
    for work in workers:  # driver -> call <function> (CLIENT, from the trainers' pool too) -> the function's span
        call = parent_of(work, index)
        assert call.name == "call stacking-" + work.name.split(".")[1] and parent_of(call, index) is driver[0]
        assert any(s.name.startswith("store.") and parent_of(s, index) is work for s in finished)
    assert sorted(s.attributes.get("faasgd.trainer_id", -1) for s in workers) == [-1, -1, 0, 1]


@pytest.mark.parametrize("env_vars, wanted", [
    ({}, []), ({"OTEL_TRACES_EXPORTER": "none"}, []), ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, ["otlp"]),
    ({"OTEL_EXPORTER_ZIPKIN_ENDPOINT": "http://z:9411/api/v2/spans"}, ["zipkin"]),
    ({"OTEL_TRACES_EXPORTER": "console,faasgd-file", "FAASGD_TRACES_DIR": "/tmp/x"}, ["console", "faasgd-file"]),
])
def test_exporters_only_when_the_standard_variables_ask(env_vars, wanted):
    assert setup.exporters_wanted(env_vars) == wanted


@pytest.mark.parametrize("env_vars, field", [({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER"),
                                             ({"OTEL_TRACES_EXPORTER": "faasgd-file"}, "FAASGD_TRACES_DIR")])
def test_a_bad_exporter_setting_names_the_variable(env_vars, field):
    with pytest.raises(ConfigError) as info:
        setup.exporters_wanted(env_vars)
    assert info.value.field == field


@pytest.mark.parametrize("hostname, name", [("emnist-train-2", "emnist-train"),
                                            ("emnist-train-7d9f8b6c4d-x2kzq", "emnist-train"), ("", "faasgd")])
def test_the_service_is_the_function_unless_named(hostname, name):
    assert setup.service_name({"HOSTNAME": hostname}) == name
    assert setup.service_name({"HOSTNAME": hostname, "OTEL_SERVICE_NAME": "mine"}) == "mine"
