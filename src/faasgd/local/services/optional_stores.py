"""The stores `faasgd up --stores cluster,pool,s3,dynamodb` adds to a runtime whose stack does not name them.

stack.yml names the single Redis and memcached only, so a plain `faasgd up` starts no more than they need (a Redis
Cluster and a memcached pool took it from 0.9 s to 3.1 s when the stack named them). A request may still name
another store, and the local runtime offers four on demand, each started by `faasgd up --stores NAMES` (or by
`faasgd train`, when it starts the runtime for a job asking for one) and given to every function's replicas as a
mutating admission webhook gives a pod what its Deployment does not say (the function as deployed, what
`faas-cli describe` shows, stays as written):

| name | started | what each replica gets |
|---|---|---|
| `cluster` | a Redis Cluster (faasgd.local.services.stack_groups) | `cluster=redis-cluster://redis-cluster.openfaas-fn:6379` appended to its `stores` |
| `pool` | a memcached pool | `pool=memcached://memcached-pool-0.memcached-pool.openfaas-fn:11211,...` appended to its `stores` |
| `s3` | the S3-compatible server (faasgd.local.services.s3) | its S3 space (s3_url, endpoint, key secrets), whatever its `channel` |
| `dynamodb` | the same server (moto answers DynamoDB too; faasgd.local.services.dynamodb) | its two DynamoDB tables (endpoint, tables made, key secrets), whatever its `channel` |

The entries are the in-cluster addresses k8s/sharded/ gives (the lines stack.yml's comment says to append on a
cluster), so the Service table points them at the group's servers as for a stack that names them itself. Only a
function whose environment has `stores` (the faasgd functions' list of the stores a request may name) gets the
entries, and never one for a name it already has. A runtime records what it was asked in state.json
(`optional_stores`): `offered` answers which of the four a running runtime has, and `remedy` is the exact
command that gives a running runtime one it lacks (a running runtime is never changed under its jobs).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from faasgd.errors import ConfigError
from faasgd.local.services import dns

if TYPE_CHECKING:  # `faasgd down` imports this module (through control): not yaml's stack reader
    from faasgd.local.replicas.deployments import Deployment
    from faasgd.local.replicas.stack import FunctionSpec

CLUSTER, POOL, S3, DYNAMODB = "cluster", "pool", "s3", "dynamodb"
OPTIONAL = (CLUSTER, POOL, S3, DYNAMODB)  # what `--stores` takes, in the order a command names them
STORES_KEY = "stores"  # a function's environment: name=URL entries, the stores a request may name
DEFAULT_POOL_SERVERS = 3  # as k8s/sharded/memcached-pool.yaml's replicas
STATE_KEY = "optional_stores"
_NAMED = re.compile(r"(?:^|,)\s*([A-Za-z0-9_-]+)\s*=")  # an entry's name: after the start or a comma, before '='
_GROUP_OF = {CLUSTER: "redis-cluster", POOL: "memcached-pool"}  # their faasgd.local.services.stack_groups names


def parse(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """`--stores`: names from OPTIONAL separated by commas (or an iterable of them), each once, in OPTIONAL's order;
    ConfigError naming `--stores`, what it takes and what was given."""
    words = text.split(",") if isinstance(text, str) else list(text or ())
    names = [str(word).strip().lower() for word in words if str(word).strip()]
    unknown = [name for name in names if name not in OPTIONAL]
    if unknown:
        raise ConfigError("--stores", f"takes {', '.join(OPTIONAL)} separated by commas, got {', '.join(unknown)!s}"
                                      f" in {text if isinstance(text, str) else ','.join(map(str, words))!r}")
    return tuple(name for name in OPTIONAL if name in names)


def entries(asked: Iterable[str], pool_servers: int | None = None) -> str:
    """The `stores` entries of the asked groups, with their in-cluster addresses ("" for none)."""
    asked = set(asked)
    parts = []
    if CLUSTER in asked:
        parts.append(f"{CLUSTER}=redis-cluster://{dns.CLUSTER.name}.{dns.CLUSTER.namespace}:"
                     f"{dns.CLUSTER.port}")
    if POOL in asked:
        members = [dns.pool_member(i) for i in range(pool_servers or DEFAULT_POOL_SERVERS)]
        parts.append(f"{POOL}=memcached://" + ",".join(f"{m.name}.{m.namespace}:{m.port}" for m in members))
    return ",".join(parts)


def named(stores: str) -> set[str]:
    """The names a `stores` value gives."""
    return set(_NAMED.findall(stores or ""))


def pod_spec(spec: FunctionSpec, asked: Iterable[str], pool_servers: int | None = None) -> FunctionSpec:
    """The spec a pod of `spec` runs with: its `stores` with the asked groups it does not name appended."""
    if STORES_KEY not in spec.environment:
        return spec
    current = spec.environment[STORES_KEY]
    missing = [name for name in asked if name in _GROUP_OF and name not in named(current)]
    added = entries(missing, pool_servers)
    if not added:
        return spec
    joined = f"{current.rstrip(' ,')},{added}" if current.strip(" ,") else added
    return replace(spec, environment={**spec.environment, STORES_KEY: joined})


def spawner(spawn: Callable, asked: Iterable[str], pool_servers: int | None = None) -> Callable:
    """`spawn` (a Supervisor's replica starter) giving each pod the spec `pod_spec` makes."""
    asked = tuple(asked)
    if not any(name in _GROUP_OF for name in asked):
        return spawn

    def start(deployment: Deployment, name: str, host) -> object:
        return spawn(replace(deployment, spec=pod_spec(deployment.spec, asked, pool_servers)), name, host)
    return start


def offered(state: Mapping | None) -> set[str]:
    """Which of OPTIONAL a running runtime has: those it was asked for, the groups its stack named itself, and S3
    when its server runs."""
    state = state or {}
    asked = state.get(STATE_KEY)
    have = {name for name in (asked if isinstance(asked, list) else []) if name in OPTIONAL}
    groups = state.get("store_groups") if isinstance(state.get("store_groups"), dict) else {}
    have |= {name for name, group in _GROUP_OF.items() if group in groups}
    stores = state.get("stores") if isinstance(state.get("stores"), dict) else {}
    return have | ({S3} if S3 in stores else set())


def needed(store: str | None, channel: str | None) -> tuple[str, ...]:
    """The optional stores a job needs: the store it names if that is one of them, S3 or DynamoDB for its channel."""
    return parse([*([store] if store in (CLUSTER, POOL) else []), *([channel] if channel in (S3, DYNAMODB) else [])])


def remedy(state: Mapping, wanted: Iterable[str], directory: str | None = None) -> str:
    """The exact command that gives the runtime of `state` the `wanted` stores, keeping those it has: it is
    stopped and started again (`faasgd up` never changes a runtime that runs)."""
    names = ",".join(parse([*offered(state), *wanted]))
    folder = f" --dir {directory}" if directory else ""
    backend = " --backend docker" if state.get("backend") == "docker" else ""
    return f"faasgd down{folder} && faasgd up --stores {names}{backend}{folder}"


def refuse_missing(state: Mapping, wanted: Iterable[str], field: str, directory: str | None = None) -> None:
    """ConfigError naming `field` when the running runtime of `state` lacks one of `wanted`, with the remedy."""
    missing = [name for name in parse(wanted) if name not in offered(state)]
    if missing:
        raise ConfigError(field, f"the local runtime running (gateway {state.get('gateway_url')}) has no "
                                 f"{' or '.join(repr(name) for name in missing)} store; it starts one when asked: "
                                 f"`{remedy(state, missing, directory)}`")
