"""The local runtime, an OpenFaaS emulator on one machine (`faasgd up` / `faasgd down`); it knows no SGD.

It runs a stack.yml as faas-cli and faas-netes would on a cluster, in six rooms, each a sub-package whose docstring
says what it owns:
  gateway/    the OpenFaaS-compatible gateway: routes, forwarding, the /system API, auth, limits, metrics
  queue/      the async queue: delivery rules (ce, pro), queue-workers, messages, the JetStream broker
  replicas/   the stack read, build folders, deployed functions, the supervisor, a replica as a process
              (under of-watchdog, forked from the zygote) or as a container
  services/   what a cluster offers beside the gateway: redis-server, memcached, store groups, nats-server, an
              S3 server, Secrets as files, cluster DNS, the Docker network and registry
  lifecycle/  `faasgd up` / `faasgd down`, the daemon that runs it all in one process tree, its state file
  nodes/      emulated nodes (`faasgd up --nodes`): namespaces behind shaped links, placement as Kubernetes'
Beside them, what every room speaks: api (OpenFaaS's provider API: a FunctionDeployment, the refusals), processes
(the one place that checks or signals a process: pid + create time) and clock (the gateway's and the queue's time).

This package is the runtime's one face: the command line, the Python API, test.sh's engine and the test tooling
(faasgd.cli, faasgd.api, faasgd.batch, faasgd.testing) import what FACE names from `faasgd.local`, never a room (an
import contract, pyproject.toml), so a module may move between rooms without them. A name is imported when first
asked for (`faasgd down` loads control alone, not the daemon's modules), and read from its module at each access:
a test that patches the module is seen through the face.
"""

from __future__ import annotations

import importlib

# name -> (module, attribute; None: the module itself)
FACE: dict[str, tuple[str, str | None]] = {
    # `faasgd up`, `down`, the state file, the gateway's login, the optional stores, the queue's delivery flags
    "control": ("faasgd.local.lifecycle.control", None),
    "credentials": ("faasgd.local.lifecycle.credentials", None),
    "optional_stores": ("faasgd.local.services.optional_stores", None),
    "queue_rules": ("faasgd.local.queue.rules", None),
    "DEFAULT_DIR": ("faasgd.local.lifecycle.options", "DEFAULT_DIR"),
    "UpOptions": ("faasgd.local.lifecycle.options", "UpOptions"),
    "check_options": ("faasgd.local.lifecycle.options", "check_options"),
    "load_state": ("faasgd.local.lifecycle.state_file", "load_state"),
    "next_steps": ("faasgd.local.lifecycle.waiting_images", "next_steps"),
    "not_deployed": ("faasgd.local.lifecycle.waiting_images", "not_deployed"),
    "DeliveryPolicy": ("faasgd.local.queue.rules", "DeliveryPolicy"),
    "ProcessRef": ("faasgd.local.processes", "ProcessRef"),
    "GroupSizes": ("faasgd.local.services.stack_groups", "GroupSizes"),
    "GATEWAY_SECRETS": ("faasgd.local.services.secrets", "GATEWAY_SECRETS"),
    # the stack as faas-cli reads it, and a replica's view of it
    "load_stack": ("faasgd.local.replicas.stack", "load_stack"),
    "CE_MAX_REPLICAS": ("faasgd.local.replicas.stack", "CE_MAX_REPLICAS"),
    "THREADS": ("faasgd.local.replicas.environment", "THREADS"),
    "split_line": ("faasgd.local.replicas.logs", "split_line"),
    "Watchdog": ("faasgd.local.replicas.watchdog", "Watchdog"),
    # the store servers, for the test tooling and the benches (faasgd.testing)
    "LOOPBACK": ("faasgd.local.services.stores", "LOOPBACK"),
    "ServerProcess": ("faasgd.local.services.stores", "ServerProcess"),
    "free_port": ("faasgd.local.services.stores", "free_port"),
    "server_binary": ("faasgd.local.services.stores", "server_binary"),
    "spawn_server": ("faasgd.local.services.stores", "spawn_server"),
    "start_memcached": ("faasgd.local.services.stores", "start_memcached"),
    "start_redis": ("faasgd.local.services.stores", "start_redis"),
    "start_server": ("faasgd.local.services.stores", "start_server"),
    # emulated nodes: their links' bytes (the CLI, test.sh's engine), the namespaces and links (the benches)
    "runtime_link_bytes": ("faasgd.local.nodes.network", "runtime_link_bytes"),
    "bytes_between": ("faasgd.local.nodes.network", "bytes_between"),
    "parse_rate": ("faasgd.local.nodes.network", "parse_rate"),
    "node_links": ("faasgd.local.nodes.links", None),
}

__all__ = sorted(FACE)


def __getattr__(name: str):
    try:
        module, attribute = FACE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    found = importlib.import_module(module)
    return found if attribute is None else getattr(found, attribute)


def __dir__() -> list[str]:
    return sorted({*globals(), *FACE})
