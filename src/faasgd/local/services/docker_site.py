"""What the container backend adds to a runtime: a Docker network, a registry, and images from anywhere.

How the containers reach the runtime. The stores, the broker and the gateway stay host processes.
The runtime creates one bridge network per runtime folder (`faasgd-<id>`, labelled
`faasgd.runtime=<id>`; the id is a hash of the folder), and the host's address on it (the bridge's
gateway, e.g. 172.18.0.1) is where the containers find them: redis-server and memcached bind it
beside 127.0.0.1, and the gateway listens on it too, each on its usual port. A wall in the host's firewall
(faasgd.local.services.docker_wall, up before the first store starts and down after the last stops) lets only that network
and the host itself reach that address: a container on any other Docker network is refused. In a container's
environment every in-cluster Service address (`redis.openfaas-fn:6379`, `gateway.openfaas:8080`, ...)
is rewritten to that address and the port (faasgd.local.lifecycle.daemon.service_table, as for processes with loopback),
and the Service names resolve to it (`--add-host`). The gateway reaches each container on its own
address, port 8080. Nothing is published on the host's other interfaces.

The registry is Debian's docker-registry on a free loopback port, its files under <dir>/registry;
`REGISTRY=127.0.0.1:<port> faas-cli up` pushes there, and a deploy of an image named
127.0.0.1:<port>/... pulls it (Docker allows plain HTTP for 127.0.0.0/8). Every image is accepted:
one on loopback is pulled at each deploy (faas-netes' imagePullPolicy Always), any other must be on
this machine already; nothing is ever pulled from elsewhere.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
from pathlib import Path

import httpx

from faasgd.errors import FaasgdError, StoreUnavailable
from faasgd.local.api import Refused
from faasgd.local.replicas.containers import ContainerReplica, Network, RUNTIME_LABEL, start_container
from faasgd.local.replicas.deployments import Catalog, Code, Deployment
from faasgd.local.replicas.pods import Host
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import docker_cli, docker_wall
from faasgd.local.services.stores import ServerProcess, server_folder, spawn_server, start_server

REGISTRY_BINARY = "docker-registry"
REGISTRY_PORT = 5000  # stack.yml's default REGISTRY is 127.0.0.1:5000: the registry takes it when it is free


def runtime_id(directory: Path) -> str:
    """A short id of the runtime folder: names and labels of what the runtime creates in Docker."""
    return hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:10]


def runtime_label(identity: str) -> str:
    return f"{RUNTIME_LABEL}={identity}"


def ensure_network(identity: str) -> Network:
    """The runtime's bridge network, created unless a runtime of this folder left it (its address kept)."""
    name = f"faasgd-{identity}"
    found = docker_cli.inspect("network", name)
    if found is None:
        docker_cli.docker("network", "create", "--driver", "bridge", "--label", runtime_label(identity), name)
        found = docker_cli.inspect("network", name) or {}
    configs = (found.get("IPAM") or {}).get("Config") or [{}]
    gateway_ip = configs[0].get("Gateway", "")
    if not gateway_ip:
        raise docker_cli.DockerError(f"network {name}: Docker gave it no gateway address")
    return Network(name, gateway_ip, identity, docker_wall.bridge_name(found))


def registry_config(port: int, storage: Path) -> str:
    """docker-registry's configuration: loopback only, files under `storage`, deletes allowed."""
    return (f"version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{port}\n")


def registry_answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/v2/", timeout=0.5, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def start_registry(directory: Path, ready_timeout: float = 20.0) -> ServerProcess:
    """docker-registry on loopback, storing under <directory>/registry/data: on the port it had before
    (images pushed there keep their names across `faasgd down` / `up`), else on REGISTRY_PORT (where stack.yml's
    image names point when REGISTRY is unset), else on a free one."""
    binary = shutil.which(REGISTRY_BINARY)
    if binary is None:
        raise FaasgdError("backend docker: docker-registry not found on PATH; install it with: "
                          "apt-get install -y docker-registry")
    folder = directory / "registry"
    (folder / "data").mkdir(parents=True, exist_ok=True)

    def launch(port: int) -> ServerProcess:
        config = folder / "config.yml"
        config.write_text(registry_config(port, folder / "data"))
        tmp = server_folder("faasgd-registry-")
        return spawn_server("registry", f"127.0.0.1:{port}", port, [binary, "serve", str(config)], tmp, None)

    previous = previous_port(folder / "config.yml")
    # the port the images pushed before are named with, then the one stack.yml's default names: when still free
    for port in dict.fromkeys(p for p in (previous, REGISTRY_PORT) if p is not None):
        if port_free(port):
            try:
                return start_server(launch, port, registry_answers, ready_timeout)
            except StoreUnavailable:
                pass
    return start_server(launch, None, registry_answers, ready_timeout)


def port_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (a registry there would be someone else's: never take its images)."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def previous_port(config: Path) -> int | None:
    """The port a registry of this folder listened on before, if its configuration says one."""
    try:
        match = re.search(r"addr: 127\.0\.0\.1:([0-9]+)", config.read_text())
    except OSError:
        return None
    return int(match.group(1)) if match else None


class ImageCatalog(Catalog):
    """Every image runs: the stack's own codes, and any other image a deploy names (pulled from loopback).

    `waiting` lists the stack's functions not started for want of their image (name -> image, and the image of that
    name and tag in the runtime's registry when it holds one): what `faasgd up` and a call's 404 say to do next."""

    def __init__(self, codes, registry: str = ""):
        super().__init__(codes)
        self.registry = registry
        self.waiting: dict[str, dict[str, str]] = {}

    def code_for(self, image: str) -> Code:
        """The code of `image`, pulled first when it is in a registry on loopback; Refused(400) saying why not."""
        try:
            docker_cli.ensure_image(image)
        except docker_cli.DockerError as error:
            raise Refused(400, str(error)) from error
        if docker_cli.is_loopback_registry(image):
            print(f"faasgd runtime: pulled {image}", flush=True)
        if image in self.codes:
            return self.codes[image]
        return Code(FunctionSpec(name="", lang="", handler=Path("."), image=image), Path("."), {})

    def stack_deployments(self, now: float, only: str = "*") -> dict[str, Deployment]:
        """The stack's functions (matching `only`) whose image is here or in the registry; the others wait for a
        deploy."""
        ready = {}
        for name, deployment in super().stack_deployments(now, only).items():
            try:
                docker_cli.ensure_image(deployment.spec.image)
            except docker_cli.DockerError as error:
                print(f"faasgd runtime: {name} not started: {error}", flush=True)
                self.waiting[name] = self.wanted(deployment.spec.image)
                continue
            ready[name] = deployment
        return ready

    def wanted(self, image: str) -> dict[str, str]:
        """The image a stack function waits for, and `{registry}/{name}:{tag}` when the registry holds that one (it
        was pushed with REGISTRY set, and `faasgd up` read stack.yml without it)."""
        entry = {"image": image}
        repository, _, tag = image.rpartition("/")[2].partition(":")
        if self.registry and registry_holds(self.registry, repository, tag or "latest"):
            entry["in_registry"] = f"{self.registry}/{repository}:{tag or 'latest'}"
        return entry


def registry_holds(registry: str, repository: str, tag: str) -> bool:
    """The registry on loopback has `repository:tag` (the registry API's manifest HEAD)."""
    try:
        return httpx.head(f"http://{registry}/v2/{repository}/manifests/{tag}", timeout=2, trust_env=False, headers={
            "Accept": "application/vnd.docker.distribution.manifest.v2+json"}).status_code == 200
    except httpx.HTTPError:
        return False


class DockerSite:
    """A runtime's network and registry; `spawn` starts replicas as containers on the network."""

    def __init__(self, directory: Path):
        docker_cli.daemon_version()
        self.directory = Path(directory).resolve()
        self.identity = runtime_id(self.directory)
        docker_cli.remove_labelled_containers(runtime_label(self.identity))  # a crashed runtime's replicas
        self.network = ensure_network(self.identity)
        self.node_networks: dict[str, Network] = {}
        try:
            # before any store binds the network's address: only the network and the host reach it
            docker_wall.close(self.identity, self.network.gateway_ip, self.network.bridge)
            self.registry = start_registry(self.directory)
        except BaseException:
            docker_cli.remove_labelled(runtime_label(self.identity))  # nothing of it is left behind
            docker_wall.open_up(self.identity)
            raise

    @property
    def gateway_ip(self) -> str:
        return self.network.gateway_ip

    def catalog(self, catalog: Catalog) -> ImageCatalog:
        return ImageCatalog(catalog.stack, self.registry.url)

    def add_nodes(self, networks: dict[str, Network]) -> None:
        """Emulated nodes' networks (faasgd.local.nodes.docker_net), by node: a replica placed on one joins it, and
        its containers pass the wall to the gateway and the S3 server."""
        docker_wall.admit(self.identity, [network.bridge for network in networks.values()])
        self.node_networks = dict(networks)

    def spawn(self, deployment: Deployment, name: str, host: Host) -> ContainerReplica:
        return start_container(deployment, name, host, self.node_networks.get(host.node, self.network))

    def state(self) -> dict:
        """What state.json records of it (`faasgd down` removes by the label, stops the registry by pid)."""
        return {"backend": "docker", "runtime_id": self.identity, "network": self.network.name,
                "registry": {"url": self.registry.url, **self.registry.ref.to_json()}}

    def stop(self) -> None:
        """Stop the registry (its files stay for the next runtime), remove every container and the network, then
        the wall (the stores listening on the network's address have stopped before: the daemon stops them first)."""
        try:
            self.registry.stop()
            docker_cli.remove_labelled(runtime_label(self.identity))
        finally:
            docker_wall.open_up(self.identity)
