"""stack.yml against faas-cli's rules (tests/support/stack_rules.py) and against the faasgd config."""

import pathlib
import re
import typing

import pytest
import yaml

from support import stack_rules
from support.paths import ROOT
from faasgd.config import FIELDS, TrainConfig, load_config
from faasgd.functions.settings import named_stores
from faasgd.stacking import admission as stacking_admission
from faasgd.stacking.config import FIELDS as STACKING_FIELDS

STACK = ROOT / "stack.yml"
CONFIG_KEYS = set(FIELDS)
STACK_KEYS = CONFIG_KEYS | set(STACKING_FIELDS)  # the keys any function of the stack takes
FUNCTIONS = ("emnist-setup", "emnist-train")
STACKING = ("stacking-driver", "stacking-trainer", "stacking-reducer", "stacking-metatrainer")
NO_ENV: dict = {}  # substitution as on a machine without OPENFAAS_URL, REGISTRY or TAG


def stack():
    return stack_rules.load_stack(STACK, NO_ENV)


def test_stack_yml_follows_faas_cli_rules():
    assert stack_rules.check_stack(STACK, STACK_KEYS, NO_ENV) == []


def test_defaults_and_variables_are_substituted():
    data = stack()
    assert data["version"] == "1.0"
    assert data["provider"] == {"name": "openfaas", "gateway": "http://127.0.0.1:8080"}
    assert data["functions"]["emnist-train"]["image"] == "127.0.0.1:5000/emnist-train:0.1.0"
    env = {"OPENFAAS_URL": "http://gw:31112", "REGISTRY": "docker.io/me", "TAG": "dev"}
    data = stack_rules.load_stack(STACK, env)
    assert data["provider"]["gateway"] == "http://gw:31112"
    assert data["functions"]["emnist-setup"]["image"] == "docker.io/me/emnist-setup:dev"


@pytest.mark.parametrize("env", [NO_ENV, {"REGISTRY": ""}], ids=["REGISTRY unset", "REGISTRY empty"])
def test_no_image_name_leaves_the_machine_unless_a_registry_is_named(env):
    """faas-cli pushes each image to the registry its name starts with: without REGISTRY, that is this machine."""
    for name, function in stack_rules.load_stack(STACK, env)["functions"].items():
        registry = function["image"].split("/", 1)[0]
        assert registry == "127.0.0.1:5000", (name, function["image"])  # `faasgd up --backend docker`'s registry


def test_both_functions_use_the_template_and_the_store_secret():
    functions = stack()["functions"]
    assert set(functions) == set(FUNCTIONS + STACKING)
    for name in FUNCTIONS + STACKING:
        assert functions[name]["lang"] == "python3-http-faasgd"
        assert functions[name]["handler"] == f"./{name}"
        assert functions[name]["secrets"] == ["store-password"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_environment_holds_every_config_default(name):
    env = stack()["functions"][name]["environment"]
    assert CONFIG_KEYS <= set(env), f"missing: {sorted(CONFIG_KEYS - set(env))}"
    config = load_config(env, {})  # every value parses
    urls = {"store_url", "local_store_url"}  # cluster addresses instead of loopback ones
    assert {k: v for k, v in config.to_dict().items() if k not in urls} == {
        k: v for k, v in TrainConfig().to_dict().items() if k not in urls
    }
    assert config.store_url == "redis://redis.openfaas-fn:6379/0"
    assert config.local_store_url == "memcached://memcached-local.openfaas-fn:11211"
    assert env["gateway_url"] == "http://gateway.openfaas:8080"
    assert set(named_stores(env["stores"])) == {"redis", "memcached"}  # sharded stores are opt-in


def test_the_sharded_stores_stack_yml_says_to_append_are_the_ones_the_tests_append():
    from faasgd.testing.stacks import GROUP_STORES

    lines = [line.strip() for line in (ROOT / "stack.yml").read_text().splitlines()]
    assert "#   " + GROUP_STORES in lines
    stores = named_stores("redis=redis://redis.openfaas-fn:6379/0" + GROUP_STORES)
    assert set(stores) == {"redis", "cluster", "pool"}
    assert stores["pool"].count(",") == 2 and stores["cluster"].startswith("redis-cluster://")


@pytest.mark.parametrize("name", ["emnist-setup", "emnist-train", "stacking-driver", "stacking-trainer",
                                  "stacking-reducer", "stacking-metatrainer"])
def test_memory_limit_is_the_functions_own_limit(name):
    function = stack()["functions"][name]
    assert function["environment"]["memory_limit"] == function["limits"]["memory"]


def test_the_stacking_admissions_default_limit_is_the_stacking_functions_own():
    """test.sh checks a stacking matrix against admission.DEFAULT_MEMORY_LIMIT: the limit the functions deploy with."""
    functions = stack()["functions"]
    limits = {functions[name]["limits"]["memory"] for name in functions if name.startswith("stacking-")}
    assert limits == {stacking_admission.DEFAULT_MEMORY_LIMIT}


def test_loop_mode_timeouts_are_long_for_train_and_shorter_for_setup():
    functions = stack()["functions"]
    train = {k: stack_rules.seconds(functions["emnist-train"]["environment"][k])
             for k in ("read_timeout", "write_timeout", "exec_timeout")}
    setup = stack_rules.seconds(functions["emnist-setup"]["environment"]["exec_timeout"])
    assert min(train.values()) >= 3600
    assert 60 <= setup < train["exec_timeout"]


def test_worker_slots_are_what_emnist_train_runs_at_once_at_scale_max():
    functions = stack()["functions"]
    train = functions["emnist-train"]
    at_once = int(train["labels"]["com.openfaas.scale.max"]) * int(train["environment"]["waitress_threads"])
    assert int(functions["emnist-setup"]["environment"]["worker_slots"]) == at_once


def test_scale_labels_stay_within_the_community_edition_cap():
    for function in stack()["functions"].values():
        labels = function["labels"]
        assert 1 <= int(labels["com.openfaas.scale.min"]) <= int(labels["com.openfaas.scale.max"]) <= 5


def test_stacking_environment_holds_every_default_and_a_body_limit_for_inline_jobs():
    from faasgd.stacking.config import StackingConfig, load_stacking
    from faasgd.stacking.flow import check_inline

    for name in STACKING:
        env = stack()["functions"][name]["environment"]
        assert set(STACKING_FIELDS) <= set(env) and load_stacking(env, {}) == StackingConfig()
        check_inline(load_stacking(env, {"transfer": "inline", "trainers_num": 16}), int(env["max_request_bytes"]))


def environment_lines(function: str) -> dict[str, tuple[str, str]]:
    """A function's `environment` in stack.yml's text: key -> (value, trailing comment; "" when none)."""
    lines = STACK.read_text().splitlines()
    start = lines.index(f"  {function}:")
    block = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("environment:"))
    out = {}
    for line in lines[block + 1:]:
        if not line.startswith("      ") or line.startswith("       "):
            if line.strip().startswith("#"):
                continue
            break
        match = re.match(r"\s+([\w.<]+):\s*(\"[^\"]*\"|[^#\s]*)\s*(?:#\s*(.*))?$", line)
        if match:
            out[match[1]] = (match[2], (match[3] or "").strip())
    return out


def allowed_values(field) -> tuple[str, ...]:
    """A choice field's values ("" left out), else none."""
    inner = typing.get_args(field.annotation)
    return tuple(v for v in inner if v) if typing.get_origin(field.annotation) is typing.Literal else ()


@pytest.mark.parametrize("function, fields", [("emnist-setup", FIELDS), ("stacking-driver", STACKING_FIELDS)])
def test_every_config_key_in_stack_yml_is_a_field_with_a_comment_naming_its_values(function, fields):
    env = environment_lines(function)
    config_keys = [key for key in env if key in fields]
    assert set(config_keys) == set(fields)  # every key set, none unknown (the checker refuses unknown keys too)
    for key in config_keys:
        comment = env[key][1]
        assert comment, f"{function}: {key} has no comment"
        for value in allowed_values(fields[key]):
            assert re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", comment), \
                f"{function}: {key}'s comment does not name {value!r}: {comment!r}"


def test_the_comment_check_reads_values_and_comments_as_written():
    env = environment_lines("emnist-setup")
    assert env["activation"] == ("tanh", "tanh | relu")
    assert env["sync"][0] == '""' and "reduce_scatter" in env["sync"][1]
    assert env["gateway_url"] == ("http://gateway.openfaas:8080", "")
    assert allowed_values(FIELDS["sync"]) == ("async", "reduce", "reduce_scatter")
    assert allowed_values(FIELDS["batch_size"]) == ()


def test_build_context_holds_template_handler_and_core(tmp_path):
    for name in FUNCTIONS + STACKING:
        context = stack_rules.build_context(STACK, name, tmp_path, NO_ENV)
        for path in ("Dockerfile", "index.py", "template.yml", "requirements.txt", "function/handler.py",
                     "function/requirements.txt", "function/pyproject.toml", "function/src/faasgd/__init__.py"):
            assert (context / path).is_file(), f"{name}: {path} missing from the build context"
        handler = (context / "function" / "handler.py").read_text()
        assert handler == (ROOT / name / "handler.py").read_text()  # the function's, not the template's


# ---- the checker itself rejects what faas-cli and faas-netes reject --------------------------

def write_stack(tmp_path, edit) -> pathlib.Path:
    """A copy of stack.yml (with its template and handler folders) changed by `edit(data)`."""
    data = stack()
    edit(data)
    (tmp_path / "template").symlink_to(ROOT / "template")
    (tmp_path / "src").symlink_to(ROOT / "src")
    (tmp_path / "pyproject.toml").symlink_to(ROOT / "pyproject.toml")
    for name in FUNCTIONS + STACKING:
        (tmp_path / name).mkdir()
        (tmp_path / name / "handler.py").write_text("def handle(event, context):\n    return None\n")
    path = tmp_path / "stack.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def problems(tmp_path, edit):
    return stack_rules.check_stack(write_stack(tmp_path, edit), STACK_KEYS, NO_ENV)


def test_checker_accepts_the_unchanged_copy(tmp_path):
    assert problems(tmp_path, lambda data: None) == []


def test_provider_faas_is_rejected_with_faas_cli_message(tmp_path):
    found = problems(tmp_path, lambda data: data["provider"].update(name="faas"))
    assert found == ["['openfaas'] is the only valid \"provider.name\" for the OpenFaaS CLI, but you gave: faas"]


def test_uppercase_function_name_is_rejected(tmp_path):
    def rename(data):
        data["functions"]["Emnist-Train"] = data["functions"].pop("emnist-train")
        data["functions"]["Emnist-Train"]["handler"] = "./emnist-train"

    assert "Emnist-Train: service: (Emnist-Train) is invalid, must be a valid DNS entry" in problems(tmp_path, rename)


def test_scale_max_above_five_is_rejected(tmp_path):
    found = problems(tmp_path, lambda data: data["functions"]["emnist-train"]["labels"].update(
        {"com.openfaas.scale.max": "6"}))
    assert found == ["emnist-train: com.openfaas.scale.max is set too high for Community Edition"]


def test_scale_min_above_max_and_scale_zero_are_rejected(tmp_path):
    def edit(data):
        data["functions"]["emnist-train"]["labels"].update({"com.openfaas.scale.min": "4",
                                                            "com.openfaas.scale.max": "3"})
        data["functions"]["emnist-setup"]["labels"]["com.openfaas.scale.zero"] = "true"

    found = problems(tmp_path, edit)
    assert "emnist-train: com.openfaas.scale.min (4) is above com.openfaas.scale.max (3)" in found
    assert "emnist-setup: com.openfaas.scale.zero not available for Community Edition" in found


def test_version_other_than_1_0_is_rejected(tmp_path):
    found = problems(tmp_path, lambda data: data.update(version="2.0"))
    assert found == ["[1.0] are the only valid versions for the stack file - found: 2.0"]


def test_unknown_env_keys_and_secrets_in_env_are_rejected(tmp_path):
    def edit(data):
        env = data["functions"]["emnist-train"]["environment"]
        env.update(batchsize="64", store_password="x", store_url="redis://:hunter2@redis:6379/0")

    found = problems(tmp_path, edit)
    assert any("unknown key 'batchsize'" in p for p in found)
    assert any("'store_password' looks like a secret" in p for p in found)
    assert any("store_url carries credentials" in p for p in found)


def test_missing_template_handler_and_typo_keys_are_rejected(tmp_path):
    def edit(data):
        data["functions"]["emnist-setup"]["lang"] = "python3-http-nope"
        data["functions"]["emnist-train"]["handler"] = "./nowhere"
        data["functions"]["emnist-train"]["enviroment"] = {}

    found = problems(tmp_path, edit)
    assert ("emnist-setup: language template: python3-http-nope not supported, build a custom Dockerfile, "
            "error: template python3-http-nope not found") in found
    assert "emnist-train: building emnist-train, ./nowhere is an invalid path" in found
    assert "emnist-train: unknown key 'enviroment'" in found


def test_copy_paths_must_stay_inside_the_project(tmp_path):
    def edit(data):
        data["configuration"]["copy"] = [".", "../outside"]

    found = problems(tmp_path, edit)
    assert any(p.startswith("forbidden path appears to equal the entire project: .") for p in found)
    assert any(p.startswith("forbidden path appears to be outside of the build context: ../outside") for p in found)


def test_envsubst_forms():
    env = {"SET": "v", "EMPTY": ""}
    assert stack_rules.envsubst("${SET:-d} ${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${SET} $SET $UNSET. $$x", env) == \
        "v d d d v v . $x"
    with pytest.raises(stack_rules.StackError, match="unsupported substitution"):
        stack_rules.envsubst("${SET:?required}", env)


def test_timeouts_read_as_the_watchdog_does():
    assert stack_rules.seconds("30") == 30
    assert stack_rules.seconds("1h30m") == 5400
    assert stack_rules.seconds("3600s") == 3600
    assert stack_rules.seconds("an hour") is None
