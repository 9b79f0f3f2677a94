"""redis-py, imported without loading OpenTelemetry's metrics SDK.

redis-py 8 imports `opentelemetry.sdk.metrics` at its own import whenever the SDK is installed (faasgd's `traces`
extra installs it, for spans), for command metrics it records only after an application calls
`redis.observability`'s init, which faasgd never does. That import cost every process that talks to Redis (each
replica, each worker, the command line) 25-45 ms on this machine. The module is hidden while redis imports (redis
then takes the SDK for absent: its own guarded import) and is importable again right after, for anyone else.
Every faasgd module imports redis through this one.
"""

from __future__ import annotations

import sys

METRICS_SDK = "opentelemetry.sdk.metrics"

if "redis" not in sys.modules and METRICS_SDK not in sys.modules:
    sys.modules[METRICS_SDK] = None  # type: ignore[assignment]  # an import of it fails while this is here
    try:
        import redis
    finally:
        if sys.modules.get(METRICS_SDK, 0) is None:
            del sys.modules[METRICS_SDK]

import redis  # noqa: E402  (the module imported above, or already by someone else)

__all__ = ["redis"]
