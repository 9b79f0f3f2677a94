"""Training metrics in Prometheus: the replicas' exporter, emnist-train's GET /metrics, the local gateway
appending annotated functions' metrics to its own, and the Grafana dashboard querying only what is exported."""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from faasgd.functions.emnist_train import metrics as train_metrics
from faasgd.local.gateway.metrics import Metrics
from faasgd.local.gateway.scrape import merge
from faasgd.profile import exporter
from faasgd.profile.bursts import Bursts
from support.fake_replicas import FakeRegistry, FakeReplica
from support.local_gateway import gateway_in_process
from support.paths import ROOT

DASHBOARD = ROOT / "k8s" / "dashboards" / "faasgd.json"


@pytest.fixture(autouse=True)
def clean_exporter():
    exporter.forget()
    yield
    exporter.forget()


def stats(values, threshold):
    series = Bursts(threshold)
    for v in values:
        series.add(v, 0.1)
    return series.stats


def a_worker(job_id="j1", worker_id=0, now=1000.0, ended=False):
    progress = {"worker_id": worker_id, "epoch": 3, "loss": 0.42, "accuracy": 0.81, "samples": 9000, "pushes": 70,
                "fetches": 71, "conflicts": 2, "retries": 0, "last_staleness": 1, "samples_per_s": 1500.0,
                "resources": {"cpu": stats([1, 0, 1], 0.5), "rss": stats([100, 100], 16), "tx": stats([1e6, 0, 1e6], 65536),
                              "rx": stats([2e6, 0, 2e6], 65536)}}
    exporter.update(job_id, progress, {"cpu": 0.9, "rss": 150.0, "tx": 1e6, "rx": 2e6}, ended=ended, now=now)


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_workers_figures_are_exported_with_job_worker_and_replica_labels(monkeypatch):
    monkeypatch.setenv("HOSTNAME", "emnist-train-1")
    a_worker()
    exporter.job_result("j1", {"final_test_accuracy": 0.86, "final_validation_accuracy": 0.85, "time_to_target_s": 9.5,
                               "samples_per_s": 3000.0}, now=1000.0)
    found = samples(exporter.render(now=1001.0))
    labels = frozenset({("job_id", "j1"), ("worker_id", "0"), ("replica", "emnist-train-1")})
    assert found[("faasgd_worker_loss", labels)] == 0.42
    assert found[("faasgd_worker_pushes_total", labels)] == 70
    assert found[("faasgd_worker_cpu_seconds_total", labels)] == pytest.approx(0.2)
    assert found[("faasgd_worker_resident_memory_bytes", labels)] == 150e6
    assert found[("faasgd_worker_running", labels)] == 1
    assert found[("faasgd_worker_burst_seconds", labels | {("series", "tx")})] == pytest.approx(0.1)
    assert found[("faasgd_job_final_test_accuracy", frozenset({("job_id", "j1"), ("replica", "emnist-train-1")}))] == 0.86
    names = {name for name, _ in found}
    assert names >= set(exporter.family_names())


def test_an_ended_workers_series_stay_a_while_then_go():
    a_worker(ended=True, now=1000.0)
    assert samples(exporter.render(now=1000.0 + exporter.KEEP_S - 1))
    assert not samples(exporter.render(now=1000.0 + exporter.KEEP_S + 1))


def test_label_values_and_odd_numbers_survive_the_text_format():
    a_worker(job_id='j"1\\x\nnext')  # a quote, a backslash and a newline in a label value
    exporter.update("j2", {"worker_id": 0, "loss": float("nan"), "epoch": "not a number", "pushes": None})
    found = samples(exporter.render())
    loss = {dict(labels)["job_id"]: value for (name, labels), value in found.items() if name == "faasgd_worker_loss"}
    assert loss["j\"1\\x\nnext"] == 0.42 and loss["j2"] != loss["j2"]  # NaN stays NaN
    epochs = {dict(labels)["job_id"] for name, labels in found if name == "faasgd_worker_epoch"}
    assert epochs == {"j\"1\\x\nnext"}  # a value that is no number is no sample


def test_every_family_keeps_its_help_and_type_even_without_samples():
    text = exporter.render()
    for name, kind, help_text, _ in exporter.WORKER_FAMILIES:
        assert f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n" in text
    for name, help_text, _ in exporter.BURST_FAMILIES + exporter.JOB_FAMILIES:
        assert f"# HELP {name} {help_text}\n# TYPE {name} gauge\n" in text


def test_the_training_families_are_not_in_the_librarys_global_registry():
    from prometheus_client import REGISTRY, generate_latest

    a_worker()
    assert b"faasgd_worker" not in generate_latest(REGISTRY)
    assert "faasgd_worker_loss{" in exporter.render()


def test_emnist_train_answers_get_metrics_in_the_text_format():
    a_worker()
    answer = train_metrics()
    assert answer["statusCode"] == 200 and answer["headers"]["Content-Type"].startswith("text/plain; version=0.0.4")
    assert any(name == "faasgd_worker_epoch" for name, _ in samples(answer["body"]))


def test_merged_expositions_name_each_family_once():
    a_worker(worker_id=0)
    first = exporter.render()
    exporter.forget()
    a_worker(worker_id=1)
    merged = merge([first, "", exporter.render()])
    assert merged.count("# TYPE faasgd_worker_loss gauge") == 1
    workers = {dict(labels)["worker_id"] for name, labels in samples(merged) if name == "faasgd_worker_loss"}
    assert workers == {"0", "1"}


class MetricsReplica(FakeReplica):
    """A replica answering GET /metrics with a fixed exposition."""

    def __init__(self, name: str, text: str):
        super().__init__(name)
        self.text = text

    async def __call__(self, scope, receive, send) -> None:
        body = self.text.encode() if scope["path"] == "/metrics" else b"{}"
        await send({"type": "http.response.start", "status": 200 if scope["path"] == "/metrics" else 404,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})


class AnnotatedRegistry(FakeRegistry):
    def describe(self, name):
        status = super().describe(name)
        if status and name == "trainer":
            status["annotations"] = {"prometheus.io.scrape": "true", "prometheus.io.path": "/metrics"}
        return status


@pytest.mark.anyio
async def test_the_local_gateway_appends_the_annotated_replicas_metrics():
    a_worker(worker_id=0)
    one = exporter.render()
    exporter.forget()
    a_worker(worker_id=1)
    replicas = [MetricsReplica("t1", one), MetricsReplica("t2", exporter.render())]
    plain = MetricsReplica("p1", "secret_metric 1\n")  # not annotated: never scraped
    down = FakeReplica("t3")
    down.dead = True
    async with gateway_in_process(AnnotatedRegistry(trainer=replicas + [down], plain=[plain])) as gw:
        response = await gw.client.get("/metrics")
    found = samples(response.text)
    names = {name for name, _ in found}
    assert "gateway_service_count" in names and "faasgd_worker_loss" in names and "secret_metric" not in names
    assert {dict(l)["worker_id"] for n, l in found if n == "faasgd_worker_epoch"} == {"0", "1"}


# -- the dashboard --------------------------------------------------------------------------------------------
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                "unless", "sum", "avg", "min", "max", "count", "le", "inf", "nan"}


def queries(dashboard: dict) -> list[str]:
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            found.append(query["query"])
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana label_values(...) query) selects."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)  # grouping labels
    expr = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)", r"\1", expr)
    tokens = re.findall(r"[a-zA-Z_:][\w:]*(?!\w|\s*\()", expr)
    return {t for t in tokens if t not in PROMQL_WORDS and not re.fullmatch(r"\d.*", t)}


def exported() -> set[str]:
    """Every sample name the gateway's exporter and the replicas' exporter write."""
    gateway = Metrics()
    gateway.started("emnist-train")
    gateway.completed("emnist-train", 200, 0.1)
    text = gateway.render({"emnist-train": 2}).decode()
    a_worker()
    exporter.job_result("j1", {"final_test_accuracy": 0.86, "final_validation_accuracy": 0.85,
                               "time_to_target_s": 9.5, "samples_per_s": 3000.0})
    text += exporter.render()
    samples(text)  # both parse as the text format
    return set(re.findall(r"^([a-zA-Z_:][\w:]*)[{ ]", text, re.MULTILINE))  # sample names, as Prometheus stores them


def test_every_dashboard_query_names_only_exported_metrics():
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = queries(dashboard)
    assert len(exprs) >= 20
    names = set().union(*(metric_names(e) for e in exprs))
    available = exported()
    assert names and names <= available, f"not exported: {sorted(names - available)}"
    assert {"gateway_function_invocation_total", "gateway_functions_seconds_bucket", "faasgd_worker_loss",
            "faasgd_job_final_test_accuracy", "faasgd_worker_store_sent_bytes_total"} <= names


def test_the_dashboard_check_catches_a_name_nobody_exports():
    assert metric_names('sum by (job_id) (rate(faasgd_worker_pushs_total{job_id=~"$job_id"}[$__rate_interval]))') \
        == {"faasgd_worker_pushs_total"}
    assert "faasgd_worker_pushs_total" not in exported()
    assert metric_names('histogram_quantile(0.99, sum by (le) (rate(gateway_functions_seconds_bucket[5m])))') \
        == {"gateway_functions_seconds_bucket"}
