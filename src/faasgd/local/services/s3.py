"""The S3-compatible service a function configured for S3 finds on a cluster, played on this machine.

On a cluster a function with `channel: s3` (LambdaML's rounds) or `transfer: s3` (the stacking functions) in its
environment reaches an S3-compatible service through its `s3_url` (s3://bucket/prefix), an endpoint
(`s3_endpoint_url`, e.g. an in-cluster MinIO's Service; none for AWS) and the secrets `s3-access-key` and
`s3-secret-key` (faasgd.channels.s3_settings). Locally nobody runs that service, so when a replica of a function
whose environment asks for S3 starts, the runtime provides it:

1. the server: moto's server mode (`python -m faasgd.testing.moto_atomic`, moto with its object PUT made atomic
   as S3's is), one per runtime, on a free loopback port, started the first time a function asks (the stack's
   at `faasgd up`, or a later deploy). It is recorded among the stores in state.json as `s3`, so `faasgd down`
   stops it and an `up` after a crash adopts it, objects and all. It plays the Service SERVICE_ADDRESS
   (faasgd.local.services.dns): a stack written for a cluster with MinIO at that address runs unchanged.
2. its bucket: the bucket of the function's s3_url, created once (a function naming no s3_url gets DEFAULT_URL,
   one bucket shared by every function, as emnist-setup and emnist-train must share their jobs' objects).
3. its secrets: `s3-access-key` and `s3-secret-key` created in the runtime's secrets when missing (random
   values; the server checks no signature, as the local stores ask no password) and listed for its pods.
4. its endpoint: `s3_endpoint_url` = SERVICE_URL when the function brings no endpoint of its own (neither that
   variable nor a listed `s3-endpoint` secret); the Service table turns it into 127.0.0.1:<port>.

The function as deployed (/system/functions, `faas-cli describe`, `faas-cli diff`) stays as it was deployed: the
additions are its pods', as a mutating admission webhook adds to a pod what its Deployment does not say.
A function whose environment does not ask for S3 is left alone, even with an s3_url of its own, unless the
runtime was started with `faasgd up --stores s3` (`every_function`; faasgd.local.services.optional_stores): then every
function's pods get S3 as if they asked, so a request chooses it (`channel: s3`) with no stack edit.

Why moto: it is the S3 server our tests already run (a dev dependency), pure Python, and needs no binary from
outside a package registry. It is the extra `local` (pyproject.toml): the replicas of the process backend run
in the same environment as the runtime, so `faasgd up` with such a stack works wherever `faasgd up` does.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import secrets as tokens
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import replace
from typing import Callable, Mapping
from urllib.parse import urlsplit

from faasgd.errors import StoreUnavailable
from faasgd.local import processes
from faasgd.local.api import Refused
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas.deployments import Deployment
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import dns, dynamodb
from faasgd.local.services.secrets import SecretStore
from faasgd.local.services.stores import (LOOPBACK, ServerProcess, adopt_server, server_folder, spawn_server,
                                          start_server)

ASKING_KEYS = ("channel", "transfer")  # environment keys whose value `s3` asks for S3
SERVICE = dns.Service("minio", dns.FUNCTION_NAMESPACE, 9000, "s3")  # MinIO's Service, as a cluster has
SERVICE_ADDRESS = f"{SERVICE.name}.{SERVICE.namespace}:{SERVICE.port}"
SERVICE_URL = f"http://{SERVICE_ADDRESS}"
DEFAULT_URL = "s3://faasgd-local"  # the s3_url of a function that asks for S3 and names none
KEY_SECRETS = ("s3-access-key", "s3-secret-key")
ENDPOINT_ENV, ENDPOINT_SECRET, URL_ENV = "s3_endpoint_url", "s3-endpoint", "s3_url"
SERVER_MODULE = "faasgd.testing.moto_atomic"
READY_TIMEOUT_S = 30.0  # moto imports boto and flask before it answers: seconds on a loaded machine
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")  # AWS's rules, as faasgd.channels.s3_settings


def asks_for_s3(environment: Mapping[str, str]) -> bool:
    """True when the function's `channel` or `transfer` is s3."""
    return any(str(environment.get(key) or "").strip().lower() == "s3" for key in ASKING_KEYS)


def bucket_of(url: str) -> str | None:
    """The bucket of an s3://bucket[/prefix] URL, None when it is no such URL (the function then says why)."""
    parts = urlsplit(str(url).strip())
    bucket = parts.netloc
    return bucket if parts.scheme == "s3" and _BUCKET.match(bucket) and ".." not in bucket else None


def pod_spec(spec: FunctionSpec) -> FunctionSpec:
    """The spec a pod of a function asking for S3 runs with: s3_url, the endpoint and the key secrets added
    where the function has none of its own."""
    env = dict(spec.environment)
    if not str(env.get(URL_ENV) or "").strip():
        env[URL_ENV] = DEFAULT_URL
    if not str(env.get(ENDPOINT_ENV) or "").strip() and ENDPOINT_SECRET not in spec.secrets:
        env[ENDPOINT_ENV] = SERVICE_URL
    listed = spec.secrets + tuple(name for name in KEY_SECRETS if name not in spec.secrets)
    return replace(spec, environment=env, secrets=listed)


def start_s3_server(port: int | None = None, ready_timeout: float = READY_TIMEOUT_S,
                    host: str = LOOPBACK) -> ServerProcess:
    """moto's server (PUT atomic) on `host` (loopback, or a container network's gateway address under
    `faasgd up --backend docker`), a free port unless `port`; returns once it answers."""
    if importlib.util.find_spec("moto") is None:
        raise StoreUnavailable("s3 (local)", "a function asks for S3 (channel or transfer s3) and the local S3 "
                                             "server needs moto: pip install 'faasgd[local]'")

    def launch(p: int) -> ServerProcess:
        tmp = server_folder("faasgd-s3-")
        argv = [sys.executable, "-m", SERVER_MODULE, "-H", host, "-p", str(p)]
        return spawn_server("s3", f"http://{host}:{p}", p, argv, tmp, None)

    return start_server(launch, port, functools.partial(server_answers, host=host), ready_timeout)


def server_answers(port: int, host: str = LOOPBACK) -> bool:
    """True when moto answers its own API on host:port."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/moto-api/", timeout=1.0) as answer:
            return answer.status == 200
    except (OSError, urllib.error.URLError):
        return False


def make_bucket(endpoint: str, bucket: str) -> None:
    """Create `bucket` (S3's CreateBucket, unsigned: the local server checks no signature); one that exists is fine."""
    request = urllib.request.Request(f"{endpoint}/{bucket}", data=b"", method="PUT")
    try:
        with urllib.request.urlopen(request, timeout=10.0):
            return
    except urllib.error.HTTPError as error:
        if error.code == 409:  # BucketAlreadyOwnedByYou / BucketAlreadyExists: made before
            return
        raise StoreUnavailable(endpoint, f"creating the bucket {bucket} answered {error.code}") from None
    except OSError as error:
        raise StoreUnavailable(endpoint, f"creating the bucket {bucket}: {error}") from None


def make_key_secrets(store: SecretStore, names: tuple[str, ...] = KEY_SECRETS) -> list[str]:
    """Create the missing key secrets (random values); returns the names created."""
    created = []
    for name in names:
        try:
            store.create(name, tokens.token_urlsafe(24).encode())
            created.append(name)
        except Refused:  # it exists: the user's (faas-cli secret create) or made before
            pass
    return created


class LocalS3:
    """The runtime's S3 server, started when a function first asks for it; provides each such pod its S3, and its
    DynamoDB tables to a pod asking for those (the same moto server answers both: faasgd.local.services.dynamodb)."""

    def __init__(self, store: SecretStore, adopted: dict | None = None, address: str = LOOPBACK,
                 every_function: bool = False, dynamodb_every_function: bool = False):
        self.store, self.address = store, address  # where the server listens: where the pods can reach it
        self.every_function = every_function  # `faasgd up --stores s3`: every function's pods get S3, asked or not
        self.dynamodb_every_function = dynamodb_every_function  # `faasgd up --stores dynamodb`: the same for DynamoDB
        self.server = adopt(adopted, address)
        self.on_start: Callable[[dict[str, str], dict], None] = lambda addresses, entry: None
        self._buckets: set[str] = set()
        self._tables: set[tuple[str, str]] = set()  # (region, table) made on the running server
        self._lock = threading.Lock()

    def attach(self, on_start: Callable[[dict[str, str], dict], None]) -> None:
        """`on_start(addresses, entry)` is called whenever a server runs (an adopted one at once): the Service
        addresses it plays (for the runtime's Service table) and its state-file entry (among the stores)."""
        self.on_start = on_start
        if self.server is not None:
            self._publish()

    def provide(self, spec: FunctionSpec) -> FunctionSpec:
        """The spec one pod of `spec` runs with: unchanged unless it asks for S3 (or every function gets it), else
        served, bucket and all."""
        s3 = self.every_function or asks_for_s3(spec.environment)
        tables = self.dynamodb_every_function or dynamodb.asks_for_dynamodb(spec.environment)
        if not (s3 or tables):
            return spec
        pod = pod_spec(spec) if s3 else spec
        pod = dynamodb.pod_spec(pod) if tables else pod
        with self._lock:
            if self.server is None or not self.server.alive():
                if self.server is not None:
                    self.server.stop()  # died: moto kept everything in memory, so its buckets are gone too
                self.server, self._buckets, self._tables = start_s3_server(host=self.address), set(), set()
                self._publish()
            if s3:
                self._serve_s3(pod)
            if tables:
                self._serve_dynamodb(pod)
        return pod

    def _serve_s3(self, pod: FunctionSpec) -> None:
        bucket = bucket_of(pod.environment[URL_ENV])
        if bucket is not None and bucket not in self._buckets:
            make_bucket(self.server.url, bucket)
            self._buckets.add(bucket)
        make_key_secrets(self.store)

    def _serve_dynamodb(self, pod: FunctionSpec) -> None:
        region, tables = dynamodb.tables_of(pod.environment)
        for table in tables:
            if (region, table) not in self._tables:
                dynamodb.make_table(self.server.url, region, table)
                self._tables.add((region, table))
        make_key_secrets(self.store, dynamodb.KEY_SECRETS)

    def spawner(self, spawn: Callable) -> Callable:
        """`spawn` (a Supervisor's replica starter) giving each pod the spec `provide` makes."""
        def start(deployment: Deployment, name: str, host) -> object:
            return spawn(replace(deployment, spec=self.provide(deployment.spec)), name, host)
        return start

    def entry(self) -> dict | None:
        """The server's state-file entry, like a store's; None while none runs."""
        return None if self.server is None else {"url": self.server.url, **self.server.ref.to_json()}

    def stop(self) -> None:
        with self._lock:
            if self.server is not None:
                self.server.stop()

    def _publish(self) -> None:
        self.on_start(dns.addresses({"s3": f"{self.address}:{self.server.port}"}, [SERVICE, dynamodb.SERVICE]),
                      self.entry())


def adopt(entry: dict | None, address: str = LOOPBACK) -> ServerProcess | None:
    """The S3 server a crashed runtime left (its objects with it) if it still answers; stopped when silent."""
    ref = ProcessRef.from_json(entry)
    if ref is None:
        return None
    server = adopt_server("s3", str(entry.get("url", "")), ref, functools.partial(server_answers, host=address))
    if server is None:
        processes.stop(ref)
    return server
