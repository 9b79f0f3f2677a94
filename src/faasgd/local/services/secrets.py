"""Function secrets as files: the local stand-in for Kubernetes Secrets in `openfaas-fn`.

`.faasgd/secrets/<name>` holds one secret's value (mode 0600, folder 0700), written atomically;
`/system/secrets` creates, lists, replaces and removes them, and each replica gets a folder with
copies of the secrets its function lists, as faas-netes projects them into
`/var/openfaas/secrets/`. Names are Kubernetes Secret names (DNS-1123 subdomains, which faas-cli
also checks), so a name is never a path. Values are never returned, logged or put in an error.

The gateway's own login (`basic-auth-user`, `basic-auth-password`) lives in the same folder but
belongs, as in OpenFaaS, to the `openfaas` namespace: it is not listed, cannot be replaced or removed
through the API, and is never projected into a function's folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from faasgd.local.api import Refused

GATEWAY_SECRETS = ("basic-auth-user", "basic-auth-password")  # the gateway's, not a function's
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")  # DNS-1123 subdomain
MAX_NAME = 253
MAX_VALUE_BYTES = 1 << 20  # a Kubernetes Secret holds at most 1 MiB


def check_name(name: object) -> str:
    """The name if it is a valid secret name; Refused(422) otherwise, as Kubernetes answers Invalid."""
    if not isinstance(name, str) or not name:
        raise Refused(422, "name: a secret needs a name")
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise Refused(422, f"name: {name[:80]!r} is not a valid secret name (lower-case letters, digits, '-' "
                           f"and '.', starting and ending with a letter or digit, at most {MAX_NAME})")
    return name


class SecretStore:
    """The secrets of one runtime, as files in `directory`."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def names(self) -> list[str]:
        """The functions' secrets, sorted (the gateway's own are not among them)."""
        if not self.directory.is_dir():
            return []
        return sorted(p.name for p in self.directory.iterdir()
                      if p.is_file() and _NAME.match(p.name) and p.name not in GATEWAY_SECRETS)

    def exists(self, name: str) -> bool:
        return name not in GATEWAY_SECRETS and (self.directory / check_name(name)).is_file()

    def create(self, name: str, value: bytes) -> None:
        """Refused(409) if it exists (also the gateway's own names)."""
        if check_name(name) in GATEWAY_SECRETS or self.exists(name):
            raise Refused(409, f"secret {name} already exists" +
                          (" (the gateway's own login; choose another name)" if name in GATEWAY_SECRETS else ""))
        write_private(self.directory / name, value)

    def replace(self, name: str, value: bytes) -> None:
        """Refused(404) if there is no such secret."""
        self._found(name)
        write_private(self.directory / name, value)

    def remove(self, name: str) -> None:
        """Refused(404) if there is no such secret."""
        self._found(name)
        (self.directory / name).unlink()

    def project(self, names: tuple[str, ...], target: Path) -> list[str]:
        """Copy the listed secrets that exist into `target` (emptied first); returns the names missing."""
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(mode=0o700, parents=True)
        missing = []
        for name in names:
            if _NAME.match(name) and self.exists(name):
                write_private(target / name, (self.directory / name).read_bytes())
            else:
                missing.append(name)
        return missing

    def _found(self, name: str) -> None:
        if not self.exists(name):
            raise Refused(404, f"secret {name} not found")


def write_private(path: Path, value: bytes) -> None:
    """Write `value` to `path` atomically, readable by its owner only (folder 0700, file 0600)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # created 0600
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(value)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
