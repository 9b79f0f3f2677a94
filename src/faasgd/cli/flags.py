"""What the command's own flags must be, checked before anything starts, connects or is written: a bad one is
a ConfigError naming the flag (exit 2, one line)."""

from __future__ import annotations

import re
from pathlib import Path

from faasgd.errors import ConfigError

# A function as the gateway names it: a DNS label (faas-netes' rule), optionally with its namespace.
FUNCTION_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?\Z")
INVOKE_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")  # what the gateway forwards


def function_name(name: str, field: str = "name") -> str:
    """A function's name, never a path (it becomes part of a gateway URL or a log file pattern)."""
    if not FUNCTION_NAME.match(name):
        raise ConfigError(field, f"must be a function's name (lower-case letters, digits and '-', as the stack "
                                 f"names it), got {name[:80]!r}")
    return name


def seconds(flag: str, value: float) -> float:
    if not value > 0:  # NaN too
        raise ConfigError(flag, f"must be a number of seconds > 0, got {value!r}")
    return value


def stack_file(path: str) -> str:
    if not Path(path).is_file():
        raise ConfigError("--file", f"no stack file {path!r} (run from the repository root or pass -f)")
    return path


def method(name: str) -> str:
    if name.upper() not in INVOKE_METHODS:
        raise ConfigError("--method", f"must be one of {', '.join(INVOKE_METHODS)}, got {name[:40]!r}")
    return name.upper()
