"""Which gateway a command talks to: --gateway, then $OPENFAAS_URL, then the running local runtime.

faas-cli's order, minus its fallback to http://127.0.0.1:8080: a gateway that nobody named and
that this machine's runtime did not start may be anybody's, so the command stops and says so.
The client logs in to /system with the local runtime's login when the URL is that runtime's
gateway, else with the one `faas-cli login` saved for it (faasgd.local.credentials).
"""

from __future__ import annotations

import os

from faasgd.errors import ConfigError
from faasgd.local import control, credentials
from faasgd.openfaas import GatewayClient


def gateway_url(args) -> str:
    if getattr(args, "gateway", None):
        return args.gateway
    if os.environ.get("OPENFAAS_URL"):
        return os.environ["OPENFAAS_URL"]
    state = control.read_state(getattr(args, "dir", control.DEFAULT_DIR))
    if state:
        return state["gateway_url"]
    raise ConfigError("gateway", "no gateway: pass --gateway URL, set OPENFAAS_URL, or start one with `faasgd up`")


def gateway(args, timeout_s: float = 30.0) -> GatewayClient:
    url = gateway_url(args)
    runtime = control.read_state(getattr(args, "dir", control.DEFAULT_DIR))
    return GatewayClient(url, timeout_s=timeout_s, auth=credentials.for_gateway(url, runtime))
