"""The local runtime's OpenFaaS-compatible gateway: Starlette routes, httpx forwarding, a
queue-worker on nats-server's JetStream (queue.py, queue_jetstream.py) and prometheus-client
metrics, served by uvicorn (see app.py for the routes and where they depart from OpenFaaS CE)."""

from faasgd.local.gateway.app import create_app
from faasgd.local.gateway.options import GatewayOptions, Registry
from faasgd.local.gateway.server import LocalGateway

__all__ = ["GatewayOptions", "LocalGateway", "Registry", "create_app"]
