"""Deployed functions: what code each runs, and how /system/functions describes them.

The runtime can only run code it has a build folder for, so it knows each stack function's image
as a piece of code (`Code`: the build folder, and the environment its Dockerfile gives). A
FunctionDeployment (`faas-cli deploy`) names an image: the runtime runs that image's code with the
deployment's envVars, secrets, labels and the rest, under the deployment's name, as faas-netes would
run the image in a pod. An image no stack function builds is refused with a 400 saying how to add
it (CE would pull it; there is no registry here).
"""

from __future__ import annotations

import fnmatch

import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from faasgd.local.api import FunctionDeployment, NAMESPACE, Refused, clamp_replicas, scale_range
from faasgd.local.replicas.logs import stamp
from faasgd.local.replicas.stack import FunctionSpec

# The password of a URL's user-info (scheme://user:PASSWORD@host), wherever a URL sits in a value.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:)[^@\s/]*@")
TEMPLATE_THREADS = 4  # calls one replica runs at once unless its environment sets waitress_threads (index.py)


@dataclass(frozen=True)
class Code:
    """An image the runtime can run: the stack function it is built for, its build folder, its ENV."""

    spec: FunctionSpec  # the stack function that builds this image
    build_dir: Path  # build/<fn>/ as faas-cli lays it out (index.py is run from here)
    image_env: dict[str, str]  # the template Dockerfile's ENV (faasgd.local.replicas.dockerfile)


@dataclass(frozen=True)
class Deployment:
    """One function as deployed: its spec, its code, when it was created, and its rollout."""

    spec: FunctionSpec
    code: Code
    created_at: float  # seconds since the epoch; kept by updates, as a Deployment's creationTimestamp
    generation: int = 1  # bumped by every update; replicas of an older one are replaced


class Catalog:
    """The images of the stack's functions, and the code each one is."""

    def __init__(self, codes: list[Code]):
        self.stack = list(codes)
        self.codes: dict[str, Code] = {}
        for code in codes:
            self.codes.setdefault(code.spec.image, code)  # two functions of one image run the same code

    def code_for(self, image: str) -> Code:
        """The code of `image`; Refused(400) naming the image and how to add it."""
        if image in self.codes:
            return self.codes[image]
        known = ", ".join(f"{code.spec.name}: {name}" for name, code in self.codes.items())
        raise Refused(400, f"image: {image} is not built by this runtime (it runs the images of its stack's "
                           f"functions: {known}); to run it, add a function with this image to the stack file "
                           f"and restart the runtime (faasgd down, then faasgd up -f STACK)")

    def stack_deployments(self, now: float, only: str = "*") -> dict[str, Deployment]:
        """Each stack function deployed as `faas-cli deploy -f` would deploy it; those whose name matches the
        wildcard `only`, as `faas-cli deploy --filter` picks them."""
        return {code.spec.name: Deployment(code.spec, code, now) for code in self.stack
                if fnmatch.fnmatchcase(code.spec.name, only)}


def deployed_spec(request: FunctionDeployment, code: Code) -> FunctionSpec:
    """The spec a FunctionDeployment gives: the code's template and handler, everything else the request's."""
    low, high = scale_range(request.labels)
    return replace(code.spec, name=request.service, image=request.image, environment=dict(request.env_vars),
                   secrets=request.secrets, labels=dict(request.labels), annotations=dict(request.annotations),
                   constraints=request.constraints, limits=dict(request.limits), requests=dict(request.requests),
                   read_only_root_filesystem=request.read_only_root_filesystem, env_process=request.env_process,
                   min_replicas=low, max_replicas=high)


def replicas_after_update(request: FunctionDeployment, current: int) -> int:
    """faas-netes update: scale.min, when the labels give a positive one, else the count as it is."""
    given = request.labels.get("com.openfaas.scale.min", "")
    return scale_range(request.labels)[0] if given.isdigit() and int(given) > 0 else current


def scaled(spec: FunctionSpec, requested: int) -> int:
    """The count a scale request of `requested` gives this function (faasgd.local.api.clamp_replicas)."""
    return clamp_replicas(requested, spec.max_replicas)


def calls_per_replica(spec: FunctionSpec) -> int:
    """Calls one replica of the function runs at once: the template's waitress threads (`waitress_threads` in
    its environment, else the template's 4). A call beyond them waits in the replica, not started."""
    value = spec.environment.get("waitress_threads", "")
    return int(value) if value.isdigit() and int(value) > 0 else TEMPLATE_THREADS


def function_status(deployment: Deployment, replicas: int, available: int) -> dict:
    """The FunctionStatus JSON of /system/function/NAME (faas-provider types.FunctionStatus).

    Departure: faas-netes reports no envVars and adds its own labels (faas_function, uid) and the
    annotation prometheus.io.scrape; here the deployed envVars, labels and annotations are reported
    as deployed, so `faas-cli diff` finds no drift right after a deploy. A password in a URL of an
    envVar is shown as *** (it belongs in a secret; `faas-cli diff` shows that variable as drift).
    """
    spec = deployment.spec
    env_vars = {key: masked(value) for key, value in spec.environment.items()}
    status = {"name": spec.name, "image": spec.image, "namespace": NAMESPACE, "envProcess": spec.env_process,
              "envVars": env_vars, "constraints": list(spec.constraints), "secrets": list(spec.secrets),
              "labels": dict(spec.labels), "annotations": dict(spec.annotations),
              "readOnlyRootFilesystem": spec.read_only_root_filesystem, "replicas": replicas,
              "availableReplicas": available,
              "createdAt": stamp(datetime.fromtimestamp(deployment.created_at, timezone.utc))}
    status.update({kind: dict(value) for kind, value in (("limits", spec.limits), ("requests", spec.requests))
                   if value})
    return status


def masked(value: str) -> str:
    """`value` with the password of every URL in it replaced by *** (redis://:***@host:6379/0)."""
    return _URL_PASSWORD.sub(r"\1***@", value)
