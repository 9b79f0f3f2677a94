"""k8s/ manifests: strict schema validation (kubernetes-validate, offline) and the placement facts."""

import re
import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from support.docs import prose_files
from support.paths import ROOT

K8S = ROOT / "k8s"
SHARDED = K8S / "sharded"  # the opt-in sharded stores, a kustomization of their own
MANIFESTS = sorted(p for p in [*K8S.glob("*.yaml"), *SHARDED.glob("*.yaml")] if p.name != "kustomization.yaml")
OLDEST = "1.29.0"  # the oldest Kubernetes we claim to support
NEWEST = ".".join(kubernetes_validate.latest_version().split(".")[:2]) + ".0"  # the newest bundled schemas
NAMESPACE = "openfaas-fn"
TRAIN_POD = {"faas_function": "emnist-train"}  # faas-netes labels every function pod this way
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job")  # kinds whose pods run containers
SERVERS = ("Deployment", "DaemonSet", "StatefulSet")  # kinds whose pods serve


def documents(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def resources():
    return {(doc["kind"], doc["metadata"]["name"]): doc for path in MANIFESTS for doc in documents(path)}


def test_both_kubernetes_versions_are_bundled():
    bundled = {v.rsplit(".", 1)[0] for v in all_versions()}
    assert {"1.29", NEWEST.rsplit(".", 1)[0]} <= bundled


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_passes_strict_validation(path, version):
    docs = documents(path)
    assert docs, f"{path.name} holds no resources"
    for doc in docs:
        # raises ValidationError (bad field) or SchemaNotFoundError (unknown kind or apiVersion)
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("folder", [K8S, SHARDED], ids=["k8s", "sharded"])
def test_kustomization_lists_existing_files_of_our_namespace(folder):
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    assert kustomization["namespace"] == NAMESPACE
    listed = kustomization["resources"]
    assert len(listed) == len(set(listed))
    for name in listed:
        assert (folder / name).is_file(), f"kustomization lists missing {name}"
    # everything of the folder but the example Secret (a published placeholder must not be applied by default)
    assert set(listed) == {p.name for p in MANIFESTS if p.parent == folder} - {"secret.example.yaml"}


def test_everything_lives_in_the_function_namespace():
    for (kind, name), doc in resources().items():
        assert doc["metadata"].get("namespace") == NAMESPACE, f"{kind}/{name}"


def test_services_select_their_workloads_by_pod_labels():
    found = resources()
    for (kind, name), doc in found.items():
        if kind in WORKLOADS and "selector" in doc["spec"]:
            selector = doc["spec"]["selector"]["matchLabels"]
            assert selector.items() <= doc["spec"]["template"]["metadata"]["labels"].items()
    for name in ("redis", "memcached", "memcached-local", "redis-cluster", "memcached-pool"):
        service = found[("Service", name)]
        workload = found.get(("Deployment", name)) or found.get(("DaemonSet", name)) or found[("StatefulSet", name)]
        assert service["spec"]["selector"].items() <= workload["spec"]["template"]["metadata"]["labels"].items()
        ports = {c["name"] for c in workload["spec"]["template"]["spec"]["containers"][0]["ports"]}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports


@pytest.mark.parametrize("kind, name", [("Deployment", "redis"), ("Deployment", "memcached"),
                                        ("StatefulSet", "redis-cluster"), ("StatefulSet", "memcached-pool")])
def test_global_stores_prefer_the_node_of_a_train_replica(kind, name):
    spec = resources()[(kind, name)]["spec"]["template"]["spec"]
    affinity = spec["affinity"]["podAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in affinity  # never Pending for lack of a worker
    (term,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert 1 <= term["weight"] <= 100
    assert term["podAffinityTerm"]["labelSelector"] == {"matchLabels": TRAIN_POD}
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


def test_node_local_cache_is_a_daemonset_behind_a_local_only_service():
    found = resources()
    assert ("DaemonSet", "memcached-local") in found
    service = found[("Service", "memcached-local")]["spec"]
    assert service["internalTrafficPolicy"] == "Local"
    assert service["ports"][0]["port"] == 11211


def test_memcached_item_limit_is_raised_for_large_models():
    found = resources()
    for kind, name in (("Deployment", "memcached"), ("DaemonSet", "memcached-local"),
                       ("StatefulSet", "memcached-pool")):
        args = found[(kind, name)]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("-I") + 1] == "4m"


@pytest.mark.parametrize("kind, name", [("Deployment", "redis"), ("StatefulSet", "redis-cluster")])
def test_redis_password_comes_from_the_store_password_secret_through_a_file(kind, name):
    found = resources()
    secret = found[("Secret", "store-password")]
    assert list(secret["stringData"]) == ["store-password"]  # the file /var/openfaas/secrets/store-password
    spec = found[(kind, name)]["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == "store-password" and volume["secret"]["defaultMode"] & 0o007 == 0
    (init,) = spec["initContainers"]
    assert {m["name"] for m in init["volumeMounts"]} == {volume["name"], "config"}
    container = spec["containers"][0]
    args = container["args"]
    assert args[0] == "/config/redis.conf" and "--requirepass" not in args
    assert args[args.index("--save") + 1] == "" and args[args.index("--appendonly") + 1] == "no"


def test_no_secret_reaches_a_command_line_or_an_environment_variable():
    for (kind, name), doc in resources().items():
        if kind not in WORKLOADS:
            continue
        spec = doc["spec"]["template"]["spec"]
        for container in spec.get("initContainers", []) + spec["containers"]:
            words = " ".join(container.get("command", []) + container.get("args", []))
            assert not re.search(r"\$\([A-Za-z_][A-Za-z0-9_]*\)", words), f"{kind}/{name}: a $(VAR) in {words}"
            assert not [e for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})], \
                f"{kind}/{name}/{container['name']} takes a secret as an environment variable"


def test_every_container_runs_on_a_read_only_root_filesystem_writing_only_its_volumes():
    for (kind, name), doc in resources().items():
        if kind not in WORKLOADS:
            continue
        spec = doc["spec"]["template"]["spec"]
        volumes = {v["name"] for v in spec.get("volumes", [])}
        for container in spec.get("initContainers", []) + spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, f"{kind}/{name}/{container['name']}"
            assert context["allowPrivilegeEscalation"] is False and context["capabilities"]["drop"] == ["ALL"]
            assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes
    for kind, name in (("Deployment", "redis"), ("StatefulSet", "redis-cluster")):
        redis = resources()[(kind, name)]["spec"]["template"]["spec"]["containers"][0]
        assert {m["mountPath"] for m in redis["volumeMounts"] if not m.get("readOnly")} == {"/data"}  # its --dir


def test_the_node_local_cache_never_leaves_a_node_without_one_while_it_rolls():
    strategy = resources()[("DaemonSet", "memcached-local")]["spec"]["updateStrategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    pod = resources()[("DaemonSet", "memcached-local")]["spec"]["template"]["spec"]
    assert not [p for c in pod["containers"] for p in c["ports"] if "hostPort" in p]  # two pods fit on a node


def test_every_container_has_resources_and_every_server_probes():
    for (kind, name), doc in resources().items():
        if kind not in WORKLOADS:
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert {"requests", "limits"} <= set(container["resources"]), f"{kind}/{name}"
            if kind in SERVERS:
                assert "readinessProbe" in container and "livenessProbe" in container, f"{kind}/{name}"


def test_the_redis_cluster_is_six_nodes_made_three_masters_with_a_replica_each_by_its_job():
    found = resources()
    statefulset = found[("StatefulSet", "redis-cluster")]["spec"]
    assert statefulset["replicas"] == 6 and statefulset["serviceName"] == "redis-cluster"
    args = statefulset["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--cluster-enabled") + 1] == "yes" and "/data/nodes.conf" in args
    service = found[("Service", "redis-cluster")]["spec"]
    assert service["clusterIP"] == "None" and [p["port"] for p in service["ports"]] == [6379]
    job = found[("Job", "redis-cluster-bootstrap")]["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in job["containers"][0]["env"]}
    pods = env["PODS"].split()
    assert pods == [f"redis-cluster-{i}.redis-cluster:6379" for i in range(statefulset["replicas"])]
    assert env["REPLICAS"] == "1" and statefulset["replicas"] // (1 + int(env["REPLICAS"])) == 3
    script = job["containers"][0]["args"][0]
    assert "--cluster create" in script and "--askpass" in script and " -a " not in script
    (volume,) = job["volumes"]
    assert volume["secret"]["secretName"] == "store-password"


def test_each_pool_member_is_a_pod_the_stack_names_by_its_dns_name():
    found = resources()
    statefulset = found[("StatefulSet", "memcached-pool")]["spec"]
    assert statefulset["serviceName"] == "memcached-pool"
    assert found[("Service", "memcached-pool")]["spec"]["clusterIP"] == "None"
    from faasgd.testing.stacks import GROUP_STORES  # what stack.yml says to append to name them

    stores = GROUP_STORES
    pool = stores.split("pool=memcached://", 1)[1].split(",")
    assert pool == [f"memcached-pool-{i}.memcached-pool.{NAMESPACE}:11211" for i in range(statefulset["replicas"])]
    assert "cluster=redis-cluster://redis-cluster.openfaas-fn:6379" in stores


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_every_listed_resource():
    kinds = set()
    for folder in (K8S, SHARDED):
        rendered = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
        assert rendered.returncode == 0, rendered.stderr
        kinds |= {(doc["kind"], doc["metadata"]["name"]) for doc in yaml.safe_load_all(rendered.stdout) if doc}
    assert kinds == set(resources()) - {("Secret", "store-password")}


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_strict_validation_rejects_an_unknown_field(version):
    service = dict(resources()[("Service", "memcached-local")])
    service["spec"] = {**service["spec"], "internalTrafficPolicyy": "Local"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, version, strict=True)


# A documented `kubectl apply -k k8s/...  # what it creates` line, and the stores such a comment may name
APPLY_LINE = re.compile(r"kubectl apply -k (k8s/[\w/.-]*)[ \t]+#[ \t]*([^\n]+)")
STORE_WORDS = {"redis cluster": "redis-cluster", "memcached pool": "memcached-pool",
               "node-local memcached daemonset": "memcached-local", "redis": "redis", "memcached": "memcached"}


def named_stores(comment: str) -> set[str]:
    """The store workloads a comment names (the longest words first: "Redis Cluster" is not "redis")."""
    text, names = comment.lower(), set()
    for words in sorted(STORE_WORDS, key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w-]){re.escape(words)}(?![\w-])")
        if pattern.search(text):
            names.add(STORE_WORDS[words])
            text = pattern.sub(" ", text)
    return names


def applied_servers(folder: str) -> set[str]:
    """The serving workloads `kubectl apply -k folder` creates: `kubectl kustomize`'s rendering when kubectl is
    here, else the files the folder's kustomization lists."""
    path = ROOT / folder
    if shutil.which("kubectl"):
        rendered = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
        assert rendered.returncode == 0, rendered.stderr
        docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    else:
        listed = yaml.safe_load((path / "kustomization.yaml").read_text())["resources"]
        docs = [doc for name in listed for doc in documents(path / name)]
    return {doc["metadata"]["name"] for doc in docs if doc["kind"] in SERVERS}


def test_each_documented_kubectl_apply_creates_the_stores_its_comment_names():
    """The cluster tutorial once said `kubectl apply -k k8s/` creates the sharded stores: k8s/sharded/ does."""
    lines = [(path.name, folder, comment) for path in prose_files()
             for folder, comment in APPLY_LINE.findall(path.read_text(encoding="utf-8"))]
    assert any(folder.rstrip("/") == "k8s" for _, folder, _ in lines)  # the tutorial's lines are found
    for page, folder, comment in lines:
        named, servers = named_stores(comment), applied_servers(folder)
        assert named or not servers, (page, folder, comment)  # a folder that starts stores: its comment names them
        assert named <= servers, (page, folder, sorted(named - servers))


def test_the_store_words_name_what_they_mean():
    assert named_stores("redis, memcached, node-local memcached DaemonSet") == {"redis", "memcached", "memcached-local"}
    assert named_stores("the Redis Cluster and the memcached pool") == {"redis-cluster", "memcached-pool"}
