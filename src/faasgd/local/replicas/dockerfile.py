"""The environment an image's Dockerfile gives its containers: every `ENV` of the stage `docker build`
builds by default (the last), including what that stage inherits from earlier stages it is `FROM`.

Read as Docker reads it: `\\` continues a line, `#` starts a comment line, `ENV k=v k2="v 2"` and the
legacy `ENV k v`, `$VAR`, `${VAR}`, `${VAR:-word}` and `${VAR:+word}` expanded from the stage's `ARG`
defaults and the environment so far (single quotes keep `$` literal). A stage `FROM` an outside
image starts from `base` (its environment is not known without pulling it: the runtime passes a
container's basics, so `ENV PATH=$PATH:/x` appends to the local PATH).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def image_env(path: str | Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The final stage's environment (what `ENV` set, over `base` for a stage from an outside image)."""
    stages: dict[str, dict[str, str]] = {}
    env: dict[str, str] = dict(base or {})
    args: dict[str, str] = {}
    global_args: dict[str, str] = {}
    started = False
    for instruction, rest in instructions(Path(path).read_text()):
        if instruction == "FROM":
            words = expand(rest, global_args).split()
            source = next((w for w in words if not w.startswith("--")), "")
            env = dict(stages.get(source.lower(), base or {}))
            args, started = {}, True
            if len(words) >= 2 and words[-2].upper() == "AS":
                stages[words[-1].lower()] = env
        elif instruction == "ARG":
            for name, value in _arg_pairs(rest, {**global_args, **args, **env} if started else global_args):
                (args if started else global_args)[name] = value
        elif instruction == "ENV" and started:
            for name, value in env_pairs(rest, {**args, **env}):
                env[name] = value
    return env


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, its arguments) per logical line: continuations joined, comment lines dropped."""
    result, pending = [], ""
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue  # blank and comment lines, also inside a continued instruction (Docker drops them)
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        instruction, _, rest = (pending + line).strip().partition(" ")
        result.append((instruction.upper(), rest.strip()))
        pending = ""
    return result


def env_pairs(text: str, scope: Mapping[str, str]) -> list[tuple[str, str]]:
    """The (name, value) pairs of one ENV instruction, values expanded and unquoted."""
    name, _, value = text.strip().partition(" ")
    if "=" not in name:  # legacy form: ENV NAME the rest of the line
        return [(name, "".join(_words(value.strip(), scope, split=False)))]
    return [tuple(word.split("=", 1)) for word in _words(text, scope)]


def expand(text: str, scope: Mapping[str, str]) -> str:
    """`$VAR`, `${VAR}`, `${VAR:-word}` (word if unset or empty), `${VAR:+word}` (word if set)."""

    def substitute(match: re.Match) -> str:
        name = match.group(1) or match.group(4)
        value = scope.get(name, "")
        if match.group(2) == "-":
            return value or match.group(3)
        if match.group(2) == "+":
            return match.group(3) if value else ""
        return value

    return _VARIABLE.sub(substitute, text)


def _words(text: str, scope: Mapping[str, str], split: bool = True) -> list[str]:
    """Words split on unquoted blanks (unless not `split`), quotes removed, `\\x` kept as x, and `$`
    expanded except inside single quotes or when escaped."""
    words: list[str] = []
    parts: list[tuple[str, bool]] = []  # (text, expandable) pieces of the current word
    quote, escaped, started = None, False, False
    for char in text:
        if escaped:
            parts.append((char, False))
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = started = True
        elif quote and char == quote:
            quote = None
        elif quote:
            parts.append((char, quote == '"'))
        elif char in "'\"":
            quote = char
            started = True
        elif char.isspace() and split:
            if started:
                words.append(_join(parts, scope))
            parts, started = [], False
        else:
            parts.append((char, True))
            started = True
    if started or parts:
        words.append(_join(parts, scope))
    return words


def _join(parts: list[tuple[str, bool]], scope: Mapping[str, str]) -> str:
    """Expand runs of expandable characters; literal ones stay as they are."""
    out, run, literal = [], "", ""
    for char, expandable in parts:
        if expandable:
            out.append(literal)
            literal, run = "", run + char
        else:
            out.append(expand(run, scope))
            run, literal = "", literal + char
    out += [literal, expand(run, scope)]
    return "".join(out)


def _arg_pairs(text: str, scope: Mapping[str, str]) -> list[tuple[str, str]]:
    pairs = []
    for word in text.split():
        name, sep, value = word.partition("=")
        pairs.append((name, expand(value.strip("\"'"), scope) if sep else scope.get(name, "")))
    return pairs
