"""The gateway's login: generated once (0600), read back, and found for a gateway URL (the local
runtime's own, or the one `faas-cli login` saved); never sent to another URL. In-process."""

from __future__ import annotations

import base64
import stat

from faasgd.local.lifecycle import credentials


def test_ensure_generates_a_strong_login_once_with_private_files(tmp_path):
    secrets = tmp_path / "secrets"
    login, generated = credentials.ensure(secrets)
    again, generated_again = credentials.ensure(secrets)
    assert generated and not generated_again and again == login
    user, password = login
    assert user == "admin" and len(password) >= 32 and password != credentials.ensure(tmp_path / "other")[0][1]
    for name in ("basic-auth-user", "basic-auth-password"):
        assert stat.S_IMODE((secrets / name).stat().st_mode) == 0o600
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700


def test_read_trims_blanks_and_needs_both_files(tmp_path):
    assert credentials.read(tmp_path) is None
    (tmp_path / "basic-auth-user").write_text("admin\n")
    assert credentials.read(tmp_path) is None
    (tmp_path / "basic-auth-password").write_text("  pw \n")
    assert credentials.read(tmp_path) == ("admin", "pw")


def faas_cli_config(home, gateway, user="admin", password="pw"):
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    (home / ".openfaas").mkdir(parents=True)
    (home / ".openfaas" / "config.yml").write_text(
        f"auths:\n- gateway: {gateway}\n  auth: basic\n  token: {token}\n- gateway: http://oauth.test\n  auth: oauth2\n")


def test_a_gateway_gets_the_runtimes_login_or_faas_clis_and_no_other(tmp_path):
    secrets = tmp_path / "rt" / "secrets"
    login, _ = credentials.ensure(secrets)
    runtime = {"gateway_url": "http://127.0.0.1:7000", "dir": str(tmp_path / "rt")}
    faas_cli_config(tmp_path / "home", "http://cluster.test:31112/", "alice", "a:b")
    environ = {"HOME": str(tmp_path / "home")}
    assert credentials.for_gateway("http://127.0.0.1:7000/", runtime, environ) == login
    assert credentials.for_gateway("http://cluster.test:31112", runtime, environ) == ("alice", "a:b")
    assert credentials.for_gateway("http://127.0.0.1:7001", runtime, environ) is None  # never another URL's
    assert credentials.for_gateway("http://oauth.test", None, environ) is None
    assert credentials.faas_cli_login("http://cluster.test:31112", {"HOME": str(tmp_path / "nobody")}) is None
    assert credentials.faas_cli_login("http://cluster.test:31112",
                                      {"OPENFAAS_CONFIG": str(tmp_path / "home" / ".openfaas")}) == ("alice", "a:b")
