"""A replica's environment: the template Dockerfile's ENV, the stack's environment and environment
files, the runtime's own settings, and nothing else of the shell. In-process; files in tmp_path."""

from __future__ import annotations

from dataclasses import replace

import pytest

from faasgd.errors import ConfigError
from faasgd.local.replicas import environment
from faasgd.local.replicas.dockerfile import env_pairs, image_env
from faasgd.local.replicas.stack import load_stack
from support.paths import ROOT

SHELL = {"PATH": "/usr/bin:/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "store_url": "redis://elsewhere:1/0",
         "AWS_SECRET_ACCESS_KEY": "leak", "VIRTUAL_ENV": "/venv", "mode": "shell"}


def test_the_templates_dockerfile_gives_the_ship_stages_env_over_the_path_it_extends():
    env = image_env(ROOT / "template/python3-http-faasgd/Dockerfile", {"PATH": "/usr/bin:/bin"})
    assert env == {"PATH": "/usr/bin:/bin:/home/app/.local/bin", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                   "fprocess": "python index.py", "cgi_headers": "true", "mode": "http",
                   "upstream_url": "http://127.0.0.1:5000"}


def test_stages_args_quotes_and_continuations(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "ARG BASE=debian\nFROM ${BASE} AS base\nARG GREETING=hi\n"
        "ENV A=1\nENV A=2 \\\n    # a comment inside\n    B=\"two words\" C='$A literal' D=$GREETING-${A} E=\\$A\n"
        "FROM base AS next\nENV LEGACY value with spaces $A\n"
        "FROM other:1 AS unrelated\nENV ONLY=unrelated\n"
        "FROM next\nENV F=${MISSING:-fallback} G=${A:+set}\n")
    assert image_env(dockerfile, {"PATH": "/p"}) == {
        "PATH": "/p", "A": "2", "B": "two words", "C": "$A literal", "D": "hi-1", "E": "$A",
        "LEGACY": "value with spaces 2", "F": "fallback", "G": "set"}  # D: one ENV sees the values before it
    assert env_pairs('X="a \\"quoted\\" b"', {}) == [("X", 'a "quoted" b')]


def test_layers_in_order_with_nothing_else_of_the_shell():
    spec = load_stack(ROOT / "stack.yml", env={})["emnist-train"]
    spec = replace(spec, env_process="python index.py", environment={**spec.environment, "OMP_NUM_THREADS": "2"})
    table = {"redis.openfaas-fn:6379": "127.0.0.1:7001", "gateway.openfaas:8080": "127.0.0.1:7000"}
    env = environment.container_env(
        environment.basics(SHELL, "/rt/replicas/emnist-train-1/tmp"),
        {"PATH": "/usr/bin:/bin:/home/app/.local/bin", "mode": "http", "upstream_url": "http://127.0.0.1:5000"},
        environment.function_env(spec, table),
        environment.replica_env(45001, "emnist-train-1", "/rt/replicas/emnist-train-1/secrets"))
    assert env["PATH"] == "/usr/bin:/bin:/home/app/.local/bin" and env["HOME"] == "/home/me"
    assert env["LANG"] == "C.UTF-8" and env["TMPDIR"] == "/rt/replicas/emnist-train-1/tmp"
    assert env["mode"] == "http"  # the image's, not the shell's
    assert env["store_url"] == "redis://127.0.0.1:7001/0"  # the stack's, Service address made local
    assert env["gateway_url"] == "http://127.0.0.1:7000" and env["batch_size"] == "128"
    assert env["fprocess"] == "python index.py" and env["OMP_NUM_THREADS"] == "2"  # the stack may override
    assert env["upstream_url"] == "http://127.0.0.1:45001" and env["HOSTNAME"] == "emnist-train-1"
    assert env["FAASGD_SECRETS_DIR"] == "/rt/replicas/emnist-train-1/secrets"
    assert not {"AWS_SECRET_ACCESS_KEY", "VIRTUAL_ENV"} & set(env)
    assert environment.basics({}, "/t")["PATH"] == environment.DEFAULT_PATH


def test_environment_files_override_the_environment_in_order(tmp_path):
    (tmp_path / "one.yml").write_text("environment:\n  a: from-one\n  b: from-one\n")
    (tmp_path / "two.yml").write_text("environment:\n  b: from-two\n  n: 3\n")
    (tmp_path / "stack.yml").write_text(
        "provider: {name: openfaas}\nfunctions:\n  f:\n    lang: l\n    handler: ./h\n    image: i\n"
        "    environment: {a: own, c: own}\n    environment_file: [one.yml, two.yml]\n"
        "    annotations: {note: x}\n    limits: {memory: 1Gi, cpu: 1}\n    constraints: [node=a]\n")
    spec = load_stack(tmp_path / "stack.yml", env={})["f"]
    assert spec.environment == {"a": "from-one", "c": "own", "b": "from-two", "n": "3"}
    assert spec.annotations == {"note": "x"} and spec.limits == {"memory": "1Gi", "cpu": "1"}
    assert spec.constraints == ("node=a",)
    (tmp_path / "two.yml").write_text("- not a map\n")
    with pytest.raises(ConfigError) as error:
        load_stack(tmp_path / "stack.yml", env={})
    assert error.value.field == "functions.f.environment_file"


@pytest.mark.parametrize("limits, usable, expected", [({}, 2, 1), ({"cpu": "1"}, 2, 1), ({"cpu": "2"}, 2, 2),
                                                      ({"cpu": "4"}, 2, 2), ({"cpu": "1500m"}, 4, 1),
                                                      ({"cpu": "100m"}, 2, 1), ({"memory": "1Gi"}, 8, 1)])
def test_a_process_replicas_blas_threads_follow_its_cpu_limit_within_the_machines(limits, usable, expected):
    assert environment.blas_threads(limits, usable) == expected


def test_a_process_replicas_cpu_limit_that_is_no_quantity_names_the_field():
    with pytest.raises(ConfigError, match=r"^limits\.cpu: "):
        environment.blas_threads({"cpu": "1Gi"}, 2)


def test_the_replica_sets_the_blas_variables_unless_the_image_or_the_function_names_one():
    assert environment.blas_env({"mode": "http"}, 2) == {name: "2" for name in environment.THREADS}
    assert environment.blas_env({"OMP_NUM_THREADS": "3"}, 2) == {}  # index.py gives the others 3
    assert environment.blas_env({"OPENBLAS_NUM_THREADS": ""}, 1) == {name: "1" for name in environment.THREADS}
    basics = environment.basics(SHELL, "/t", environment.blas_env({}, 2))
    assert {name: basics[name] for name in environment.THREADS} == {name: "2" for name in environment.THREADS}
    assert environment.basics(SHELL, "/t")["OPENBLAS_NUM_THREADS"] == "1"  # the zygote's


def test_a_process_replica_with_a_cpu_limit_docker_would_refuse_runs_one_thread_and_says_why(tmp_path):
    from faasgd.local.replicas.pods import replica_threads

    log = tmp_path / "f-1.log"
    assert replica_threads({"cpu": "2"}, 2, log) == 2 and not log.exists()
    assert replica_threads({"cpu": "1Gi"}, 2, log) == 1
    assert "limits.cpu: not a CPU quantity" in log.read_text() and "1 thread" in log.read_text()
