"""The local gateway as a hostile caller meets it, in process: the real app and the runtime's real Supervisor
over fake pods (support.fake_pods), behind httpx.ASGITransport, or called with a raw ASGI scope for what
no HTTP client sends (CR or LF in a header value, Content-Length beside Transfer-Encoding, a body cut off).

`Door.refuses` asserts the status, a JSON error holding the words that name the field, and that nothing
happened: no replica was called, started, stopped or replaced, nothing was queued, no secret written.
"""

from __future__ import annotations

import asyncio
import base64
import json
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from support.fake_pods import LOGIN, system_gateway

SETUP, TRAIN = "emnist-setup", "emnist-train"
TRAIN_IMAGE = "127.0.0.1:5000/emnist-train:0.1.0"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def error(self) -> str:
        assert self.headers.get("content-type") == "application/json", self.body[:300]
        return json.loads(self.body)["error"] if self.body else ""


@dataclass
class Door:
    gw: object  # support.local_gateway.InProcessGateway
    supervisor: object
    pods: object  # support.fake_pods.FakePods
    secrets: Path
    published: list = field(default_factory=list)

    def snapshot(self) -> tuple:
        return (tuple((p.name, p.stopped) for p in self.pods.made), sum(len(p.app.calls) for p in self.pods.made),
                len(self.published), sorted(p.name for p in self.secrets.iterdir()) if self.secrets.is_dir() else [])

    async def send(self, method: str, path: str, body: bytes = b"", headers: dict | None = None,
                   login: bool = True) -> Answer:
        headers = {**({"Authorization": basic(*LOGIN)} if login else {}), **(headers or {})}
        response = await self.gw.client.request(method, path, content=body, headers=headers, auth=None)
        return Answer(response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content)

    async def raw(self, method: str, path: str, headers: list[tuple[bytes, bytes]], chunks: list[bytes],
                  disconnect: bool = False) -> Answer:
        """One request as an ASGI server hands it over: `chunks` of body, then the client gone if `disconnect`."""
        raw_path = path.encode("latin-1")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": _decoded(path), "raw_path": raw_path, "query_string": b"",
                 "root_path": "", "headers": [(k.lower(), v) for k, v in headers],
                 "client": ("127.0.0.1", 40000), "server": ("gateway.test", 80)}
        events = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1 or disconnect}
                  for i, c in enumerate(chunks or [b""])]
        messages = []

        async def receive():
            return events.pop(0) if events else {"type": "http.disconnect"}

        async def send(message):
            messages.append(message)

        await asyncio.wait_for(self.gw.app(scope, receive, send), 5)
        start = next(m for m in messages if m["type"] == "http.response.start")
        return Answer(start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]},
                      b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body"))

    async def refuses(self, status: int, words: str, answer_of) -> Answer:
        """Await `answer_of` (a coroutine sending the request); assert the refusal and that nothing happened."""
        before = self.snapshot()
        answer = await answer_of
        assert answer.status == status, (answer.status, answer.body[:300])
        assert words in answer.error(), answer.error()[:300]
        await asyncio.sleep(0)  # let a queue-worker pick up anything wrongly queued
        assert self.snapshot() == before, "a refused request reached a replica, changed one, queued or wrote"
        return answer


def _decoded(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path.split("?")[0])


@asynccontextmanager
async def hostile_gateway(tmp_path: Path, **options):
    """A Door over the gateway of the stack deployed on fake pods (login LOGIN on /system)."""
    async with system_gateway(tmp_path, **options) as (gw, supervisor, pods):
        gw.client.auth = None  # each request says whether it logs in
        door = Door(gw, supervisor, pods, tmp_path / "secrets")
        publish = gw.broker.publish

        async def recorded(headers, data):
            door.published.append(data)
            await publish(headers, data)

        gw.broker.publish = recorded
        yield door
