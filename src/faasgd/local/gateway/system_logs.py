"""The gateway's GET /system/logs, answered as faas-provider's log handler over faas-netes answers.

Query: `name` (required), `namespace`, `tail` (lines per replica; <= 0 all), `since` (RFC 3339),
`follow` (Go's ParseBool; anything else is false). The answer streams NDJSON, one
{"name", "namespace", "instance", "timestamp", "text"} per line: the replicas' lines in time order,
then, with follow, new lines as they come (replicas started meanwhile included) until the client
leaves or `upstream_timeout_s` has passed (CE ends a follow at the gateway's write timeout).
As faas-netes, a request with neither tail nor since gets the last 5 minutes. A bad tail or since
answers 422 "could not parse the log request". The lines are those of the function's replicas
now, as Kubernetes keeps its pods' logs (`faasgd logs` reads every replica's file, replaced ones
included). Departure: an unknown function answers 404 (CE: 500 "function log request failed").
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import AsyncIterator

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from faasgd.local.api import NAMESPACE
from faasgd.local.clock import Clock
from faasgd.local.gateway.directory import Directory
from faasgd.local.gateway.options import GatewayOptions
from faasgd.local.gateway.responses import error
from faasgd.local.gateway.system import namespace_problem
from faasgd.local.replicas.logs import Entry, LogFile, parse_time, select, stamp

DEFAULT_SINCE = timedelta(minutes=5)  # faas-netes pkg/k8s/logs.go defaultLogSince
FOLLOW_POLL_S = 0.25
_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool


class LogsApi:
    """The handler of /system/logs."""

    def __init__(self, options: GatewayOptions, directory: Directory, clock: Clock):
        self.options, self.directory, self.clock = options, directory, clock

    def routes(self) -> list[Route]:
        return [Route("/system/logs", self.logs, methods=["GET"])]

    async def logs(self, request: Request) -> Response:
        query = request.query_params
        name = query.get("name", "")
        if not name:
            return error(400, "name: the function whose logs to read is required")
        if problem := namespace_problem(request):
            return problem
        tail, since_text = _integer(query.get("tail") or "0"), query.get("since") or ""
        since = parse_time(since_text) if since_text else None
        if tail is None or (since_text and since is None):
            return error(422, "could not parse the log request: tail must be an integer, since an RFC 3339 time")
        function = await self.directory.resolve(name)
        if function is None:
            return error(404, f"function not found: {name}")
        if since is None and tail <= 0:
            since = datetime.now(timezone.utc) - DEFAULT_SINCE
        follow = parse_bool(query.get("follow", ""))
        return StreamingResponse(self._stream(function, since, tail, follow), media_type="application/x-ndjson")

    async def _stream(self, function: str, since: datetime | None, tail: int, follow: bool) -> AsyncIterator[bytes]:
        files: dict[str, LogFile] = {}
        entries = await self._read(function, files)
        for entry in select(entries, since, tail):
            yield message(function, entry)
        deadline = self.clock.now() + self.options.upstream_timeout_s
        while follow and self.clock.now() < deadline:
            await self.clock.sleep(FOLLOW_POLL_S)
            for entry in select(await self._read(function, files), since, 0):
                yield message(function, entry)

    async def _read(self, function: str, files: dict[str, LogFile]) -> list[Entry]:
        """New lines of every replica's log, replicas started since the last read included."""
        for instance, path in await self.directory.log_sources(function) or []:
            files.setdefault(instance, LogFile(instance, path))
        return await to_thread.run_sync(lambda: [e for f in list(files.values()) for e in f.read()])


def message(function: str, entry: Entry) -> bytes:
    """One NDJSON line: faas-provider's logs.Message."""
    return (json.dumps({"name": function, "namespace": NAMESPACE, "instance": entry.instance,
                        "timestamp": stamp(entry.time), "text": entry.text}) + "\n").encode()


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool, with anything it refuses read as false (faas-provider ignores the error)."""
    return text in _TRUE
