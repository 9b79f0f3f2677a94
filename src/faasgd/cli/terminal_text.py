"""What the `faasgd` commands print of stored or received values: plain text for a terminal, never markup or control codes.

A database is input like any file: a batch named `out[/]x` must not be read as rich markup, and a name
holding `\\x1b]0;pwned\\x07` or `\\x1b[2J` must not reach the terminal as an escape sequence. Every value
shown is a rich Text (never parsed for markup) whose control and format characters (Unicode categories
Cc and Cf: ESC, BEL, CR, the bidirectional overrides, ...) are written as their Python escapes.

    cell("out[/]x")            # Text('out[/]x'), shown as it is
    visible("\\x1b[2Jhi")       # '\\\\x1b[2Jhi': the escape spelt out
"""

from __future__ import annotations

import unicodedata
from typing import Any

from rich.text import Text

HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")  # control, format, surrogate, private, unassigned, separators


def visible(text: str) -> str:
    """`text` with each control or format character (and any unprintable one) spelt as its Python escape."""
    return "".join(spelt(c) if unicodedata.category(c) in HIDDEN else c for c in text)


def spelt(char: str) -> str:
    """One character as its escape: \\x1b, \\u202e, \\U0010ffff."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def cell(value: Any) -> Text:
    """A table cell from a stored value: its text made visible, never read as markup."""
    return Text(visible("" if value is None else str(value)))


def plot_label(value: Any) -> str:
    """A stored value as matplotlib label text: visible, and `$` kept literal (never mathtext)."""
    return visible(str(value)).replace("$", r"\$")
