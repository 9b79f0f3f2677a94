"""What the hostile-input tables share: a function replica in-process (the template's shim over a function's
handler, its own store and a second named one in memory, the fake gateway) and the one assertion every
refused case makes: the status, a JSON error naming the field first, and nothing done.

"Nothing done" is counted, not assumed: the keys of both stores and the gateway's recorded calls are the
same after the case as before it, and the replica still answers ready (no handler thread broke it).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

from faasgd.functions import replica_cache
from faasgd.store import open_store
from support.fake_gateway import FakeGateway
from support.shim import Shim

# A job small enough to create in a few milliseconds (only refused cases should write nothing).
SMALL = {"dataset": "synthetic", "train_samples": "600", "test_samples": "100", "hidden_sizes": "8",
         "batch_size": "50", "max_epochs": "1", "target_accuracy": "1.0"}
NESTED_ARRAYS = b"[" * 100_000 + b"]" * 100_000
NESTED_OBJECTS = b'{"a":' * 5000 + b"1" + b"}" * 5000


def nested_value(key: str) -> bytes:
    """A body whose one key holds JSON nested 5000 deep."""
    return b'{"%s": ' % key.encode() + b"[" * 5000 + b"]" * 5000 + b"}"


@dataclass
class Replica:
    shim: Shim
    gateway: FakeGateway
    stores: list  # in-process stores: the function's own, then the one it names `memcached`
    calls: list = field(default_factory=list)  # every call the fake gateway recorded so far

    def keys(self) -> int:
        return sum(len(store.client._values) + len(store.client._lists) for store in self.stores)

    def recorded(self) -> int:
        self.calls += self.gateway.take()
        return len(self.calls)

    def send(self, method: str = "POST", body: bytes | None = None, content_type: str | None = "application/json",
             query: str = "", headers: dict | None = None, environ: dict | None = None):
        return self.shim.client.open("/", method=method, data=body, content_type=content_type, query_string=query,
                                     headers=headers or {}, environ_overrides=environ or {})

    def refuses(self, status: int, field: str, words: str = "", **request) -> dict:
        """Send the request; assert it is refused with `status`, naming `field`, and that nothing was done."""
        before = (self.keys(), self.recorded())
        answer = self.send(**request)
        assert answer.status_code == status, answer.get_data(as_text=True)[:500]
        assert answer.mimetype == "application/json"
        if request.get("method") != "HEAD":
            error = answer.get_json()
            assert error["field"] == field and error["error"].startswith(f"{field}: "), error
            assert words in error["error"], error
            assert len(answer.get_data()) < 4096, "the answer echoes an oversize value whole"
        assert (self.keys(), self.recorded()) == before, "a refused call wrote to a store or invoked a function"
        assert self.shim.ready()
        return answer


def function_env(monkeypatch, shim: Shim, **extra: str) -> Replica:
    """The function's environment (os.environ, as in a replica): SMALL job defaults, its own store, a store
    named `memcached`, a gateway, a memory_limit and a store_budget. Both stores are in process: the
    memcached one is a memory store served under a memcached:// URL, so admission counts its push copies."""
    tag = uuid.uuid4().hex[:10]
    own, other = f"memory://hostile{tag}", f"memcached://memcached-{tag}.test:11211"
    stores = [open_store(own), open_store(f"memory://hostile{tag}-memcached")]
    for url, store in zip((own, other), stores):
        replica_cache.keep_store(url, store)
    env = {**SMALL, "store_url": own, "stores": f"memcached={other}", "gateway_url": "http://gw.test:8080",
           "memory_limit": "1Gi", "store_budget": "64Mi", **extra}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Replica(shim, FakeGateway().install(monkeypatch), stores)


def as_json(value) -> bytes:
    return json.dumps(value).encode()
