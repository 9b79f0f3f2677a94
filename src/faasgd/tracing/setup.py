"""Setting up the OpenTelemetry SDK once per process, only when the standard variables ask for an exporter.

Called by the template's index.py when a replica starts (never on importing the core). The variables:
    OTEL_TRACES_EXPORTER           otlp | zipkin | console | faasgd-file | none, or several, comma-separated.
                                   Unset: otlp when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set, zipkin when
                                   OTEL_EXPORTER_ZIPKIN_ENDPOINT is, else none (the OpenTelemetry default,
                                   otlp to localhost, would send from every replica to nowhere).
    OTEL_EXPORTER_OTLP_ENDPOINT    the collector (OTLP over HTTP/protobuf; read by the exporter itself)
    OTEL_EXPORTER_ZIPKIN_ENDPOINT  Zipkin's /api/v2/spans (JSON; read by the exporter itself)
    OTEL_SERVICE_NAME              default: the function's name (from HOSTNAME, the pod's or replica's name)
    FAASGD_TRACES_DIR              faasgd-file: the directory each process appends its spans to, as JSON lines
                                   (file_exporter.py; `faasgd status JOB --trace --dir DIR` reads them)
An empty value counts as unset (stack.yml passes `${VAR:-}`). With the extra `traces` missing, or nothing
asked, nothing is set up and the API's no-op tracer stays: spans cost nothing.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from faasgd.errors import ConfigError

log = logging.getLogger("faasgd.tracing")
EXPORTERS = ("otlp", "zipkin", "console", "faasgd-file", "none")
FILE_DIR_ENV = "FAASGD_TRACES_DIR"
ENV_NAMES = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
             "OTEL_EXPORTER_ZIPKIN_ENDPOINT", "OTEL_SERVICE_NAME", FILE_DIR_ENV)  # what a stack may set for traces
# A pod's name is <deployment>-<replicaset hash>-<5 characters>; a local replica's <function>-<n>.
_POD_SUFFIX = re.compile(r"(-[0-9a-f]{6,10}-[0-9a-z]{5}|-\d+)$")
_provider: list[Any] = []  # the process's TracerProvider once set up


def exporters_wanted(env: Mapping[str, str]) -> list[str]:
    """Which exporters the environment asks for; a name not known is a ConfigError naming the variable."""
    named = (env.get("OTEL_TRACES_EXPORTER") or "").strip()
    if not named:
        if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            return ["otlp"]
        return ["zipkin"] if env.get("OTEL_EXPORTER_ZIPKIN_ENDPOINT") else []
    names = [n.strip() for n in named.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise ConfigError("OTEL_TRACES_EXPORTER", f"unknown exporter {unknown[0]!r} (allowed: {', '.join(EXPORTERS)})")
    if "faasgd-file" in names and not env.get(FILE_DIR_ENV):
        raise ConfigError(FILE_DIR_ENV, "required with OTEL_TRACES_EXPORTER=faasgd-file: the directory for the spans")
    return [n for n in names if n != "none"]


def service_name(env: Mapping[str, str], default: str | None = None) -> str:
    """OTEL_SERVICE_NAME, else `default`, else the function's name from HOSTNAME (emnist-train-2 -> emnist-train)."""
    if env.get("OTEL_SERVICE_NAME"):
        return env["OTEL_SERVICE_NAME"]
    return default or _POD_SUFFIX.sub("", env.get("HOSTNAME") or "") or "faasgd"


def configure(env: Mapping[str, str], default_service: str | None = None) -> bool:
    """Set up the SDK with the exporters `env` asks for (once per process); True when spans are exported."""
    if _provider:
        return True
    wanted = exporters_wanted(env)
    if not wanted:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        log.warning("OTEL_TRACES_EXPORTER asks for %s but the extra `traces` (opentelemetry-sdk) is not installed; "
                    "no spans are exported", ",".join(wanted))
        return False
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name(env, default_service)}))
    for name in wanted:
        exporter = _exporter(name, env)
        # a file is written at each span's end (spans are on disk when a job ends); the network ones batch
        processor = SimpleSpanProcessor if name == "faasgd-file" else BatchSpanProcessor
        provider.add_span_processor(processor(exporter))
    trace.set_tracer_provider(provider)
    _provider.append(provider)
    log.info("tracing: exporting spans to %s as %s", ",".join(wanted), service_name(env, default_service))
    return True


def _exporter(name: str, env: Mapping[str, str]) -> Any:
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "zipkin":
        from opentelemetry.exporter.zipkin.json import ZipkinExporter

        return ZipkinExporter()
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from faasgd.tracing.file_exporter import FileSpanExporter

    return FileSpanExporter(env[FILE_DIR_ENV])


def shutdown() -> None:
    """Export what is still batched (before a replica exits; os._exit skips the SDK's atexit hook)."""
    for provider in _provider:
        provider.shutdown()
