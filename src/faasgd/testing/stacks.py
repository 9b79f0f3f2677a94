"""A project's stack.yml, copied for a test's runtime with its handlers as absolute paths.

Replicas drain for `drain_s` after SIGTERM (healthcheck_interval: 5 s in stack.yml, which would make every
`faasgd down` of a test take that long); `edit(stack)` changes anything else before it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import yaml


def stack_copy(project: Path, directory: Path, drain_s: int = 1, edit: Callable[[dict], None] | None = None) -> str:
    """`project`'s stack.yml written into `directory` (handlers resolved against `project`); returns its path."""
    stack = yaml.safe_load((project / "stack.yml").read_text())
    for spec in stack["functions"].values():
        spec["handler"] = str((project / spec["handler"]).resolve())
        spec["environment"] = {**spec["environment"], "healthcheck_interval": f"{drain_s}s"}
    if edit is not None:
        edit(stack)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "stack.yml"
    path.write_text(yaml.safe_dump(stack))
    return str(path)


# The sharded stores a stack may name (stack.yml's comment above `stores` says to append exactly this; a test
# holds the two to each other): the Redis Cluster and the memcached pool of k8s/sharded/.
GROUP_STORES = (",cluster=redis-cluster://redis-cluster.openfaas-fn:6379,pool=memcached://"
                + ",".join(f"memcached-pool-{i}.memcached-pool.openfaas-fn:11211" for i in range(3)))


def with_store_groups(stack: dict) -> None:
    """A stack_copy edit: the emnist functions name the sharded stores too (GROUP_STORES)."""
    for name, spec in stack["functions"].items():
        if name.startswith("emnist-"):
            spec["environment"]["stores"] += GROUP_STORES
