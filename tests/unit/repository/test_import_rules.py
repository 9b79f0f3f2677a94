"""The wings' import contracts (pyproject.toml [tool.importlinter]) cover every module of the core, and no module
of the product may import the test tooling shipped beside it (faasgd.testing)."""

import tomllib

from support.paths import ROOT

PACKAGE = ROOT / "src" / "faasgd"
WINGS = {"local", "cli", "batch", "api", "tracking"}
TESTING = "testing"  # the shipped test tooling: bound by a contract of its own, not a layer of the product
WORKLOADS = {"faasgd.downpour", "faasgd.lambdaml", "faasgd.stacking"}
FUNCTIONS = PACKAGE / "functions"


def contracts():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["name"].split(",")[0]: c for c in config["contracts"]}


def core_modules():
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return {f"faasgd.{name}" for name in names - WINGS - {TESTING}}


def test_every_core_module_is_bound_by_the_core_contract():
    core = contracts()["Wing 1"]
    assert set(core["source_modules"]) == core_modules()
    assert {"faasgd.local", "faasgd.cli", "faasgd.batch", "faasgd.api", "flask", "waitress", "matplotlib", "yaml"} \
        <= set(core["forbidden_modules"])


def test_the_local_runtime_may_share_only_the_gateway_client_the_cpu_limit_the_checks_and_the_errors():
    local = contracts()["Wing 2"]
    # polling: the gateway client's poll_until; cpu_limit: a process replica's BLAS threads within the runtime's CPUs;
    # checks: the one check of a whole number
    allowed = {"faasgd.openfaas", "faasgd.polling", "faasgd.cpu_limit", "faasgd.checks", "faasgd.errors"}
    assert set(local["forbidden_modules"]) >= (core_modules() - allowed) | {"faasgd.cli", "faasgd.batch", "faasgd.api"}
    assert not allowed & set(local["forbidden_modules"])


def test_the_tools_do_not_import_each_other():
    tools = contracts()["Wing 3: the command line and test.sh's engine do not import each other"]
    assert tools["type"] == "independence" and set(tools["modules"]) == {"faasgd.cli", "faasgd.batch"}


def test_the_python_api_imports_neither_the_command_line_nor_the_batch_engine():
    api = contracts()["Wing 3's Python API sits under the command line: it imports neither the command line nor test.sh's engine"]
    assert api["type"] == "forbidden" and api["source_modules"] == ["faasgd.api"]
    assert {"faasgd.cli", "faasgd.batch", "rich"} <= set(api["forbidden_modules"])


def test_the_workloads_do_not_import_each_other():
    workloads = contracts()["Workloads never import each other: Downpour"]
    assert workloads["type"] == "independence" and set(workloads["modules"]) == WORKLOADS


def test_every_shared_layer_is_bound_to_import_no_workload():
    shared = contracts()["The shared layers import no workload"]
    choosing = {"faasgd.functions.workloads", "faasgd.functions.orchestrate", "faasgd.functions.emnist_setup",
                "faasgd.functions.emnist_train", "faasgd.functions.stacking"}  # the functions that run a workload
    functions = {f"faasgd.functions.{p.stem}" for p in FUNCTIONS.glob("*.py") if p.stem != "__init__"} - choosing
    assert set(shared["source_modules"]) == (core_modules() - WORKLOADS - {"faasgd.functions"}) | functions
    assert set(shared["forbidden_modules"]) == WORKLOADS


def test_the_stacking_functions_are_bound_to_load_no_other_workload():
    stacking = contracts()["Stacking's functions load neither Downpour nor LambdaML"]
    assert stacking["source_modules"] == ["faasgd.functions.stacking"]
    assert {"faasgd.downpour", "faasgd.lambdaml", "faasgd.worker"} <= set(stacking["forbidden_modules"])


def test_no_module_of_the_product_is_allowed_to_import_the_test_tooling():
    testing = contracts()["No module of faasgd imports its test tooling"]
    assert testing["type"] == "forbidden" and testing["forbidden_modules"] == [f"faasgd.{TESTING}"]
    assert set(testing["source_modules"]) == core_modules() | {f"faasgd.{wing}" for wing in WINGS}
    assert (PACKAGE / TESTING / "__init__.py").is_file()


def test_only_the_trackers_import_their_tools_libraries():
    tracking = contracts()["Only faasgd.tracking imports the trackers' libraries (the extra `track`)"]
    assert set(tracking["source_modules"]) == core_modules() | {f"faasgd.{w}" for w in WINGS - {"tracking"}}
    assert set(tracking["forbidden_modules"]) <= set(contracts()["Wing 1"]["forbidden_modules"])
    assert "faasgd.tracking" in contracts()["Wing 1"]["forbidden_modules"]
