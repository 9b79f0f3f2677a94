"""Which gateway a command talks to: --gateway, then $OPENFAAS_URL, then the running local runtime.

faas-cli's order, minus its fallback to http://127.0.0.1:8080: a gateway that nobody named and
that this machine's runtime did not start may be anybody's, so the command stops and says so.
The client logs in to /system with the local runtime's login when the URL is that runtime's
gateway, else with the one `faas-cli login` saved for it. One implementation: faasgd.api.local_runtime.
"""

from __future__ import annotations

from faasgd.api import local_runtime
from faasgd.local import control
from faasgd.openfaas import GatewayClient


def gateway_url(args) -> str:
    return local_runtime.gateway_url(getattr(args, "gateway", None), getattr(args, "dir", control.DEFAULT_DIR))


def gateway(args, timeout_s: float = 30.0) -> GatewayClient:
    return local_runtime.connect(getattr(args, "gateway", None), getattr(args, "dir", control.DEFAULT_DIR), timeout_s)
