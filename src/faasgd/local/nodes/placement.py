"""Where a pod goes among the emulated nodes, as the Kubernetes scheduler would place it, in a small form.

    rules = manifest_rules(Path("k8s"))                # the stores' pod labels and preferred pod affinity
    node = place(function_pod("emnist-train"), ["node-1", "node-2"], running_pods, policy="affinity")

What it reads (k8s/ beside the stack file): each Deployment's and StatefulSet's pod template labels and its
`podAffinity.preferredDuringSchedulingIgnoredDuringExecution` terms whose topologyKey is kubernetes.io/hostname
(k8s/redis.yaml and k8s/memcached.yaml: weight 100 toward `faas_function: emnist-train`); a DaemonSet
(k8s/memcached-local.yaml) runs one pod on every node. A function's pod carries `faas_function: <name>` and its
stack labels, as faas-netes labels it; OpenFaaS CE gives function pods no affinity and no nodeSelector (a stack's
`constraints` are recorded, not applied), so a function's placement comes from the scheduler's scoring alone.

The scoring, per node that passes (every node: no nodeSelector to filter by), best first:
1. pod affinity (policy "affinity"): the weights of the incoming pod's preferred terms that pods on the node match,
   plus those of the terms of pods on the node that the incoming pod matches (the scheduler's symmetry: a store
   preferring emnist-train draws emnist-train to the store's node);
2. spread: fewer pods of the same function on the node (the default topology spread by hostname);
3. fewer pods on the node at all (least allocated: every pod counted alike, the nodes sharing one machine's cores);
4. the node's order (the scheduler picks among equals at random; here the first, so runs repeat).
The real scheduler adds the scores of its plugins with weights; ranking them one after another is this module's
simplification, and it makes "affinity" mean what a study of affinity wants: every replica beside the store while
nothing else is asked. Policy "spread" drops step 1 (the manifests as if without affinity).
The stores the runtime starts (redis, memcached) go to the first node, together: the job's store node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import yaml

from faasgd.errors import ConfigError

POLICIES = ("affinity", "spread")
HOSTNAME = "kubernetes.io/hostname"
FUNCTION_LABEL = "faas_function"  # faas-netes' label on a function's pods
PLACED_KINDS = ("Deployment", "StatefulSet")


@dataclass(frozen=True)
class Preference:
    """One preferred pod-affinity term by hostname: `weight` toward pods whose labels include `match`."""

    weight: int
    match: Mapping[str, str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match.items())


@dataclass(frozen=True)
class Pod:
    """A pod, placed or to place: its owner (function or workload name), labels and preferred terms."""

    owner: str
    labels: Mapping[str, str]
    preferences: tuple[Preference, ...] = ()
    node: str = ""  # where it runs; "" for the one to place


@dataclass(frozen=True)
class Workload:
    """A manifest's workload: its kind and its pods' labels and preferred affinity."""

    kind: str
    labels: Mapping[str, str] = field(default_factory=dict)
    preferences: tuple[Preference, ...] = ()

    def pod(self, owner: str, node: str) -> Pod:
        return Pod(owner, self.labels, self.preferences, node)


def check_policy(policy: str) -> None:
    if policy not in POLICIES:
        raise ConfigError("--placement", f"must be one of {', '.join(POLICIES)}, got {policy!r}")


def function_pod(name: str, labels: Mapping[str, str] | None = None) -> Pod:
    """A function replica's pod as faas-netes makes it: its stack labels and faas_function."""
    return Pod(name, {**(labels or {}), FUNCTION_LABEL: name})


def place(pod: Pod, nodes: Sequence[str], placed: Iterable[Pod], policy: str = "affinity") -> str:
    """The node `pod` goes to among `nodes`, given the pods `placed` already (module doc: the scoring)."""
    if not nodes:
        raise ConfigError("--nodes", "no node to place a pod on")
    placed = list(placed)

    def rank(index: int) -> tuple:
        here = [other for other in placed if other.node == nodes[index]]
        drawn = affinity(pod, here) if policy == "affinity" else 0
        return -drawn, sum(other.owner == pod.owner for other in here), len(here), index

    return nodes[min(range(len(nodes)), key=rank)]


def affinity(pod: Pod, here: Sequence[Pod]) -> int:
    """The preferred-affinity weight between `pod` and the pods `here`, both ways."""
    return sum(term.weight for other in here for term in pod.preferences if term.matches(other.labels)) + \
        sum(term.weight for other in here for term in other.preferences if term.matches(pod.labels))


def manifest_rules(folder: Path) -> dict[str, Workload]:
    """The workloads of the manifests in `folder` (*.yaml, not recursive) by name; {} without the folder."""
    workloads: dict[str, Workload] = {}
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as error:
            raise ConfigError(str(path), f"is no YAML the placement can read: {error}") from error
        for document in documents:
            if isinstance(document, dict) and document.get("kind") in (*PLACED_KINDS, "DaemonSet"):
                workloads[str(document["metadata"]["name"])] = workload(document)
    return workloads


def workload(document: dict) -> Workload:
    template = (document.get("spec") or {}).get("template") or {}
    labels = {str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()}
    pod_affinity = ((template.get("spec") or {}).get("affinity") or {}).get("podAffinity") or {}
    terms = pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    preferences = tuple(
        Preference(int(term.get("weight", 1)),
                   {str(k): str(v) for k, v in
                    ((term.get("podAffinityTerm") or {}).get("labelSelector") or {}).get("matchLabels", {}).items()})
        for term in terms if (term.get("podAffinityTerm") or {}).get("topologyKey") == HOSTNAME)
    return Workload(str(document["kind"]), labels, preferences)
