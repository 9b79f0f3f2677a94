"""The local runtime's OpenFaaS-compatible gateway: Starlette routes, httpx forwarding to the replicas, the
/system API (functions, scaling, logs, secrets), basic auth, request limits and prometheus-client metrics, served
by uvicorn (see app.py for the routes and where they depart from OpenFaaS CE).

It owns the HTTP side of every call; async calls go to the queue room (faasgd.local.queue), replicas are found
through the Registry the replicas room implements."""

from faasgd.local.gateway.app import create_app
from faasgd.local.gateway.options import GatewayOptions, Registry
from faasgd.local.gateway.server import LocalGateway

__all__ = ["GatewayOptions", "LocalGateway", "Registry", "create_app"]
