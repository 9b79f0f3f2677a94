"""The images a `faasgd up --backend docker` waits for, and the exact commands that bring them.

The runtime starts a stack function only once its image is on this machine or in its registry on loopback;
stack.yml names the images after REGISTRY as `faasgd up` read it (127.0.0.1:5000 when unset). state.json's
`waiting` lists the functions left waiting (name -> image, and the image of that name in the runtime's registry
when it holds one: pushed with REGISTRY set while `faasgd up` read stack.yml without it). `faasgd up` prints
`next_steps`; a call that finds such a function missing says `not_deployed`.

    export REGISTRY=127.0.0.1:5000
    faas-cli up -f stack.yml --filter 'emnist-*'
"""

from __future__ import annotations

from typing import Mapping

FILTER = "'emnist-*'"  # what the Deploy path (faas-cli up --filter) builds and deploys: the training functions


def registry_of(state: Mapping | None) -> str | None:
    registry = (state or {}).get("registry")
    return registry.get("url") if isinstance(registry, dict) else None


def next_steps(state: Mapping | None) -> list[str]:
    """The shell lines that build (or only deploy), push and deploy the images the runtime waits for; the export
    line alone when it waits for none. [] without a registry (the process backend)."""
    registry = registry_of(state)
    if not registry:
        return []
    waiting = (state or {}).get("waiting") or {}
    export = f"export REGISTRY={registry}"
    if not waiting:
        return [export]
    pushed = all(entry.get("in_registry") for entry in waiting.values())
    return [export, f"faas-cli {'deploy' if pushed else 'up'} -f stack.yml --filter {FILTER}"]


def not_deployed(function: str, state: Mapping | None) -> str | None:
    """Why `function` is not found on a docker runtime and the next commands, or None when the state says nothing
    of it (a process runtime, or a function the stack does not name)."""
    registry = registry_of(state)
    entry = ((state or {}).get("waiting") or {}).get(function)
    if not registry or not isinstance(entry, dict):
        return None
    if entry.get("in_registry"):
        why = (f"stack.yml named its image {entry['image']} when `faasgd up` read it, and the runtime's registry holds "
               f"{entry['in_registry']} (REGISTRY was exported after `faasgd up`, not before)")
    else:
        why = (f"its image {entry['image']} is neither on this machine nor in the runtime's registry {registry} "
               f"(the images are built and pushed by faas-cli, after `faasgd up`)")
    steps = " && ".join(next_steps(state))
    return f"{function} is not deployed on the local runtime (--backend docker): {why}; next: {steps}"
