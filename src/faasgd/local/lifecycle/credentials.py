"""The gateway's login, as OpenFaaS keeps it: basic auth from the secrets `basic-auth-user` and
`basic-auth-password`, and how a client finds the login for a gateway URL.

`faasgd up` generates them when absent (user `admin`, a random 160-bit password, files 0600), as
OpenFaaS's installers generate the `basic-auth` secret; the gateway reads them at start and
trims surrounding blanks, as faas-provider's ReadBasicAuthFromDisk does. Clients look a gateway's
login up in this order: the local runtime serving that exact URL (its secrets folder), then the
login `faas-cli login` stored for it (`$OPENFAAS_CONFIG/config.yml`, else `~/.openfaas/config.yml`,
`./.openfaas` when CI=true, as faas-cli's config.ConfigDir), else none. A runtime's login is
never sent to another URL.

The stores' password is the function secret `store-password`, as on a cluster (k8s/: Redis's `requirepass` and
the functions' /var/openfaas/secrets/store-password are the same Secret). The runtime's Redis (and its Redis
Cluster) requires it whenever the secret exists; `faasgd up --backend docker` generates it when absent
(`store_password`), since there the stores listen on an address containers reach.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Mapping

import yaml

from faasgd.local.services.secrets import GATEWAY_SECRETS, write_private

STORE_PASSWORD = "store-password"  # the functions read it (faasgd.store.PASSWORD_SECRET); the runtime's Redis requires it

USER = "admin"  # OpenFaaS's default gateway user
Login = tuple[str, str]  # (user, password), what httpx's auth takes


def read(secrets_dir: str | os.PathLike) -> Login | None:
    """The login kept in `secrets_dir`, or None when either file is missing or empty."""
    try:
        user, password = (Path(secrets_dir, name).read_text().strip() for name in GATEWAY_SECRETS)
    except OSError:
        return None
    return (user, password) if user and password else None


def ensure(secrets_dir: str | os.PathLike) -> tuple[Login, bool]:
    """The login in `secrets_dir`, generated first if absent; (login, whether it was generated now)."""
    login = read(secrets_dir)
    if login is not None:
        return login, False
    login = (USER, secrets.token_hex(20))
    for name, value in zip(GATEWAY_SECRETS, login):
        write_private(Path(secrets_dir, name), value.encode())
    return login, True


def store_password(secrets_dir: str | os.PathLike, generate: bool) -> str | None:
    """The secret `store-password` (blanks around it trimmed, as the functions read it), generated first when absent
    and `generate` (a random 192-bit hex string: no character any store's configuration must escape); else None."""
    path = Path(secrets_dir, STORE_PASSWORD)
    try:
        password = path.read_text(encoding="utf-8").strip()
    except OSError:
        password = ""
    if password or not generate:
        return password or None
    password = secrets.token_hex(24)
    write_private(path, password.encode())
    return password


def for_gateway(url: str, runtime: Mapping | None, environ: Mapping[str, str] = os.environ) -> Login | None:
    """The login to send to `url`: the running local runtime's when `url` is its gateway, else faas-cli's."""
    if runtime and _same(url, runtime.get("gateway_url", "")):
        return read(Path(runtime["dir"]) / "secrets")
    return faas_cli_login(url, environ)


def faas_cli_login(url: str, environ: Mapping[str, str] = os.environ) -> Login | None:
    """The basic-auth login `faas-cli login` saved for `url`, or None."""
    folder = environ.get("OPENFAAS_CONFIG") or (".openfaas" if environ.get("CI") in ("true", "1") else None)
    path = Path(folder) if folder else Path(environ.get("HOME") or Path.home()) / ".openfaas"
    try:
        config = yaml.safe_load((path / "config.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    entries = config.get("auths") if isinstance(config, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("auth") == "basic" and _same(url, str(entry.get("gateway", ""))):
            return _decode(str(entry.get("token", "")))
    return None


def save_faas_cli_login(url: str, login: Login, folder: str | os.PathLike) -> Path:
    """Keep `login` for `url` in `folder`/config.yml as `faas-cli login` does (auths: gateway, auth basic, token
    base64(user:password)), the other gateways' entries kept; the file 0600. Its path."""
    path = Path(folder, "config.yml")
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    entries = [entry for entry in config.get("auths") or [] if isinstance(entry, dict)
               and not _same(url, str(entry.get("gateway", "")))]
    token = base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode()
    config["auths"] = [*entries, {"gateway": url.rstrip("/"), "auth": "basic", "token": token}]
    write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path


def _decode(token: str) -> Login | None:
    try:
        user, sep, password = base64.b64decode(token, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def _same(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/") != ""
