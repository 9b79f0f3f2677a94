"""Reading stack.yml for the local runtime, and laying out build folders as faas-cli does."""

import pytest

from faasgd.errors import ConfigError
from faasgd.local.replicas.build import build_function
from faasgd.local.replicas.stack import envsubst, load_stack
from support.paths import ROOT


def test_the_repository_stack_loads_with_its_defaults():
    functions = load_stack(ROOT / "stack.yml", env={})
    assert list(functions) == ["emnist-setup", "emnist-train", "stacking-driver", "stacking-trainer", "stacking-reducer",
                              "stacking-metatrainer"]
    train = functions["emnist-train"]
    assert train.min_replicas == 2 and train.max_replicas == 5
    assert train.image == "127.0.0.1:5000/emnist-train:0.1.0"
    assert train.environment["batch_size"] == "128" and train.environment["exec_timeout"] == "3600s"
    assert train.handler == ROOT / "emnist-train" and train.secrets == ("store-password",)


def test_substitution_takes_the_environment_first():
    functions = load_stack(ROOT / "stack.yml", env={"REGISTRY": "registry.local:5000", "TAG": "dev"})
    assert functions["emnist-setup"].image == "registry.local:5000/emnist-setup:dev"
    assert envsubst("${A:-x} ${B:-y} $A $$", {"A": "1"}) == "1 y 1 $"


def write(tmp_path, text):
    path = tmp_path / "stack.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, field", [
    ("provider: {name: faas}\nfunctions: {f: {lang: l, handler: ./h, image: i}}", "provider.name"),
    ("provider: {name: openfaas}\nfunctions: {}", "functions"),
    ("provider: {name: openfaas}\nfunctions: {f: {handler: ./h, image: i}}", "functions.f.lang"),
    ("provider: {name: openfaas}\nfunctions: {f: {lang: l, handler: ./h, image: i, "
     "labels: {com.openfaas.scale.max: '6'}}}", "functions.f.labels.com.openfaas.scale.max"),
    ("provider: {name: openfaas}\nfunctions: {f: {lang: l, handler: ./h, image: i, "
     "labels: {com.openfaas.scale.min: '3', com.openfaas.scale.max: '2'}}}", "functions.f.labels"),
    ("provider: [unclosed", "stack"),
])
def test_bad_stacks_name_the_field(tmp_path, text, field):
    with pytest.raises(ConfigError) as info:
        load_stack(write(tmp_path, text), env={})
    assert info.value.field == field


def test_build_folder_overlays_the_handler_on_the_template(tmp_path):
    spec = load_stack(ROOT / "stack.yml", env={})["emnist-train"]
    folder = build_function(spec, ROOT / "template", tmp_path)
    assert (folder / "index.py").read_text() == (ROOT / "template/python3-http-faasgd/index.py").read_text()
    assert (folder / "function/handler.py").read_text() == (ROOT / "emnist-train/handler.py").read_text()
    assert (folder / "function/__init__.py").exists()
    assert (folder / "function/handler_test.py").exists()  # the template's own files stay unless replaced
    again = build_function(spec, ROOT / "template", tmp_path)  # rebuilding replaces the folder
    assert again == folder


def test_build_names_a_missing_template(tmp_path):
    spec = load_stack(ROOT / "stack.yml", env={})["emnist-train"]
    with pytest.raises(ConfigError) as info:
        build_function(spec, tmp_path, tmp_path / "build")
    assert info.value.field == "functions.emnist-train.lang"
