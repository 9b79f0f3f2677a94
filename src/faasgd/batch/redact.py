"""Secrets kept out of everything test.sh writes or prints: store URLs with credentials masked.

A matrix may name a store by a URL with a password (`redis://:pw@host:6379/0`). The runs need the
real URL; every record, table, plot label, copy of the matrix and printed line goes through a
`Redactor` first. In any text, each URL becomes `mask_password(url)` (`redis://:***@host:6379/0`), and
each password found in the matrix file's URLs is replaced by *** wherever else it appears (its
percent-decoded form too), as a backstop for a URL split or quoted in a way the URL pattern misses.
"""

from __future__ import annotations

import re
import sys
from typing import Any
from urllib.parse import unquote

from faasgd.store.url import mask_password

MASK = "***"
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^@\s'\"<>`]*)@")


class Redactor:
    """Masks store URLs and the matrix's passwords in text and in JSON-like values."""

    def __init__(self, secrets: set[str] | None = None):
        self.secrets = sorted({s for s in secrets or () if s and s != MASK}, key=len, reverse=True)

    @classmethod
    def of(cls, text: str) -> "Redactor":
        """A redactor for the passwords of every URL in `text` (a matrix file)."""
        secrets = set()
        for userinfo in USERINFO.findall(text or ""):
            _, colon, password = userinfo.partition(":")
            if colon:
                secrets |= {password, unquote(password)}
        return cls(secrets)

    def text(self, text: str) -> str:
        text = URL.sub(lambda m: mask_password(m.group()), str(text))
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def value(self, value: Any) -> Any:
        """`value` with every string in it (dict keys included) redacted; other values as they are."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def say(self, line: Any = "", error: bool = False) -> None:
        """Print one redacted line to stdout (stderr when `error`), flushed: the only way test.sh prints."""
        print(self.text(line), file=sys.stderr if error else sys.stdout, flush=True)
