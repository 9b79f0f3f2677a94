"""Where a command's output goes, so that `faasgd CMD --json | jq .` always works.

stdout holds the command's answer: its table or summary, or with `--json` exactly one JSON document and
nothing else. Text for a person (progress while a job runs, the summary beside a JSON document) goes to
stderr with `--json`. `--quiet` prints no progress; with `--json` it prints no text for a person at all
(errors still go to stderr). main() routes each command once, from its flags:

    with output.routed(args):           # main.dispatch
        output.progress_console().print("job j1: 2 worker(s) ...")
        output.emit_json(result)        # the one document on stdout
"""

from __future__ import annotations

import errno
import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from rich.console import Console


@dataclass(frozen=True)
class Route:
    """A command's output flags: --json (the answer is one JSON document) and --quiet (no progress)."""

    as_json: bool = False
    quiet: bool = False


_route = Route()  # the running command's, set by routed()


def add_flags(parser, json_help: str = "print the answer as one JSON document on stdout (progress on stderr)") -> None:
    """--json and --quiet, for a command that prints progress or a summary beside its answer."""
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress; with --json no text for a person at all, only the JSON document")


@contextmanager
def routed(args) -> Iterator[Route]:
    """Route this command's output from its flags (commands without them print as usual); restored after."""
    global _route
    before = _route
    _route = Route(bool(getattr(args, "json", False)), bool(getattr(args, "quiet", False)))
    try:
        yield _route
    finally:
        _route = before


class PipedConsole(Console):
    """A rich console whose closed pipe ends the command as any write to a closed stdout does
    (faasgd.closed_stdout: exit 141, quietly), not with rich's own exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the console's reader went away")


def _console(to_stderr: bool, silent: bool) -> Console:
    """A rich console on stdout or stderr; wide enough for the tables when it is not a terminal."""
    plain = PipedConsole(stderr=to_stderr, quiet=silent)
    return plain if plain.is_terminal else PipedConsole(stderr=to_stderr, quiet=silent, width=max(plain.width, 140))


def console() -> Console:
    """The command's text for a person: its tables and summaries (stderr with --json, silent with --json --quiet)."""
    return _console(_route.as_json, _route.as_json and _route.quiet)


def progress_console() -> Console:
    """Progress while a job runs: stderr with --json, silent with --quiet."""
    return _console(_route.as_json, _route.quiet)


def emit_json(document: Any, **dumps: Any) -> None:
    """The command's one JSON document, on stdout."""
    sys.stdout.write(json.dumps(document, sort_keys=True, **dumps) + "\n")
    sys.stdout.flush()
