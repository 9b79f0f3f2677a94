"""The gateway's /system/functions, /system/function/NAME, /system/scale-function/NAME, /system/info
and /system/namespaces, answered as OpenFaaS CE (the faas gateway in front of faas-netes) answers.

* GET /system/functions: FunctionStatus list with invocationCount; GET /system/function/NAME: one
  (404 if absent).
* POST /system/functions creates, PUT updates (404 if absent: faas-cli then POSTs), DELETE removes
  (body {"functionName"}; 404 if absent): 202 with an empty body, as CE. A deployment's image must
  be one the runtime builds (faasgd.local.replicas.deployments); other refusals carry CE's status.
* POST /system/scale-function/NAME: the count clamped (faasgd.local.api.clamp_replicas), 202.
  Departure: the answer has a JSON body {"serviceName", "replicas"} telling the count set (CE's
  is empty), so a caller learns of a clamp.
* GET /system/info: {"provider": {...}, "version": {"release", "sha"}, "arch"};
  GET /system/namespaces: ["openfaas-fn"], CE's one namespace.
A `namespace` query other than openfaas-fn is a 400 naming it, as faas-netes answers.
"""

from __future__ import annotations

import platform

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from faasgd.local.api import NAMESPACE, Refused, parse_deployment, read_json
from faasgd.local.gateway.directory import Directory
from faasgd.local.gateway.metrics import Metrics
from faasgd.local.gateway.options import GatewayOptions
from faasgd.local.gateway.responses import SERVER, error, read_body, too_large
from faasgd.local.gateway.scaling import scale_request

MAX_DEPLOY_BODY_BYTES = 1 << 20
MAX_SMALL_BODY_BYTES = 64 << 10  # scale and delete requests


class FunctionsApi:
    """The handlers of the function routes under /system."""

    def __init__(self, options: GatewayOptions, directory: Directory, metrics: Metrics):
        self.options, self.directory, self.metrics = options, directory, metrics

    def routes(self) -> list[Route]:
        return [Route("/system/functions", self.functions, methods=["GET", "POST", "PUT", "DELETE"]),
                Route("/system/function/{name}", self.function_status, methods=["GET"]),
                Route("/system/scale-function/{name}", self.scale, methods=["POST"]),
                Route("/system/info", self.info, methods=["GET"]),
                Route("/system/namespaces", self.namespaces, methods=["GET"])]

    async def functions(self, request: Request) -> Response:
        """One route, so a method it does not serve gets a 405 whose Allow lists all four."""
        handlers = {"POST": self.create, "PUT": self.update, "DELETE": self.remove}
        return await handlers.get(request.method, self.list_functions)(request)

    async def list_functions(self, request: Request) -> Response:
        if problem := namespace_problem(request):
            return problem
        return JSONResponse([self._counted(s) for s in await self.directory.statuses()])

    async def function_status(self, request: Request) -> Response:
        name = request.path_params["name"]
        if problem := namespace_problem(request):
            return problem
        status = await self.directory.status(name)
        return error(404, f"function not found: {name}") if status is None else JSONResponse(self._counted(status))

    async def create(self, request: Request) -> Response:
        return await self._deploy(request, update=False)

    async def update(self, request: Request) -> Response:
        return await self._deploy(request, update=True)

    async def _deploy(self, request: Request, update: bool) -> Response:
        body = await read_body(request, MAX_DEPLOY_BODY_BYTES)
        if body is None:
            return too_large(MAX_DEPLOY_BODY_BYTES, "a deployment")
        try:
            await self.directory.deploy(parse_deployment(body), update)
        except Refused as refused:
            return error(refused.http_status, str(refused))
        return Response(status_code=202)

    async def remove(self, request: Request) -> Response:
        body = await read_body(request, MAX_SMALL_BODY_BYTES)
        if body is None:
            return too_large(MAX_SMALL_BODY_BYTES, "a delete request")
        if problem := namespace_problem(request):
            return problem
        try:
            data = read_json(body)
        except ValueError:
            data = None
        name = data.get("functionName") if isinstance(data, dict) else None
        if not isinstance(name, str) or not name:
            return error(400, 'request body: must be a JSON object like {"functionName": "NAME"}')
        if data.get("namespace") not in (None, "", NAMESPACE):
            return error(400, f"namespace must be: {NAMESPACE}")
        try:
            await self.directory.remove(name)
        except Refused as refused:
            return error(refused.http_status, str(refused))
        return Response(status_code=202)

    async def scale(self, request: Request) -> Response:
        name = request.path_params["name"]
        body = await read_body(request, MAX_SMALL_BODY_BYTES)
        function = await self.directory.resolve(name)
        if function is None:
            return error(404, f"function not found: {name}")
        if body is None:
            return too_large(MAX_SMALL_BODY_BYTES, "a scale request")
        replicas, problem = scale_request(body, function)
        if problem:
            return error(400, problem)
        try:
            replicas = await self.directory.scale(function, replicas)
        except Refused as refused:  # removed meanwhile
            return error(refused.http_status, str(refused))
        return JSONResponse({"serviceName": function, "replicas": replicas}, 202)

    async def info(self, request: Request) -> Response:
        version = {"release": self.options.version, "sha": self.options.sha}
        return JSONResponse({"provider": {"provider": SERVER, "orchestration": "processes", "version": version},
                             "version": version, "arch": platform.machine()})

    async def namespaces(self, request: Request) -> Response:
        return JSONResponse([NAMESPACE])

    def _counted(self, status: dict) -> dict:
        return {**status, "invocationCount": self.metrics.invocation_count(status["name"])}


def namespace_problem(request: Request) -> Response | None:
    """A 400 when the `namespace` query names another namespace than CE's one."""
    namespace = request.query_params.get("namespace", "")
    return None if namespace in ("", NAMESPACE) else error(400, f"namespace must be: {NAMESPACE}, got {namespace!r}")
