"""No setting of ours shares a name with the platform's: of-watchdog reads the container's environment,
which stack.yml `environment` becomes, and the template's Dockerfile sets its own ENV (OPENFAAS.md 1.8)."""

import re

import yaml

from faasgd.config import FIELDS
from faasgd.functions.settings import FunctionEnv
from faasgd.openfaas import WATCHDOG_ENV, WATCHDOG_TUNING
from support.paths import ROOT

TEMPLATE = ROOT / "template" / "python3-http-faasgd"


def dockerfile_env(text: str) -> set[str]:
    """The names every `ENV` instruction of a Dockerfile sets (both `ENV a=1 b=2` and `ENV a 1`)."""
    text = re.sub(r"\\\n", " ", text)  # line continuations
    names = set()
    for line in text.splitlines():
        match = re.match(r"\s*ENV\s+(.*)", line)
        if match:
            body = match.group(1)
            pairs = re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=(?:"[^"]*"|\S*)', body)
            names |= set(pairs) if pairs else {body.split()[0]}
    return names


def reserved() -> set[str]:
    return set(WATCHDOG_ENV) | dockerfile_env((TEMPLATE / "Dockerfile").read_text())


def clashes(stack_text: str) -> list[str]:
    """Stack environment names that are the platform's, other than the watchdog settings set on purpose."""
    stack = yaml.safe_load(stack_text)
    names = {key for fn in stack["functions"].values() for key in (fn.get("environment") or {})}
    return sorted(names & reserved() - set(WATCHDOG_TUNING))


def test_the_reserved_list_holds_the_watchdogs_names_and_the_images_env():
    assert {"mode", "port", "fprocess", "upstream_url", "exec_timeout", "ready_path"} <= reserved()
    assert {"cgi_headers", "PATH", "PIP_DISABLE_PIP_VERSION_CHECK"} <= dockerfile_env((TEMPLATE / "Dockerfile").read_text())


def test_no_config_key_and_no_function_setting_is_a_platform_name():
    ours = set(FIELDS) | set(FunctionEnv.__dataclass_fields__)
    assert ours & reserved() == set()


def test_stack_yml_sets_no_platform_name_but_the_watchdogs_own_tuning():
    assert clashes((ROOT / "stack.yml").read_text()) == []


def test_putting_mode_back_in_stack_yml_is_caught():
    text = (ROOT / "stack.yml").read_text()
    broken = text.replace("      invocation_mode: loop", "      mode: loop\n      invocation_mode: loop", 1)
    assert broken != text and clashes(broken) == ["mode"]


def test_index_py_sets_nothing_of_the_platforms_and_reads_only_the_watchdogs_own_settings():
    shim = [TEMPLATE / "index.py"] + [ROOT / "src" / "faasgd" / "functions" / f for f in ("replica_life.py", "http_call.py")]
    text = "".join(path.read_text() for path in shim)  # index.py and the core's modules it runs on
    names = set(re.findall(r'(?:os\.getenv|env\.get)\("([^"]+)"', text))
    ours = {"waitress_threads", "max_request_bytes", "log_level", "HOSTNAME", "LISTEN_FDS"}
    watchdogs = {"upstream_url", "exec_timeout", "write_timeout", "healthcheck_interval"}  # read, to keep to them
    assert names == ours | watchdogs and ours & reserved() == set()
    assert "os.environ[" not in text and "putenv" not in text
