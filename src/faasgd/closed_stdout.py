"""A command whose reader went away (`faasgd up | head -1`, `./test.sh --dry-run | head`) ends quietly.

    sys.exit(quiet_when_closed(main))   # main's status, or CLOSED (141) once a write found stdout closed

Unix tools end at the first write into a pipe nobody reads (SIGPIPE; a shell shows 141) and say nothing.
Python ignores SIGPIPE and raises BrokenPipeError instead: at the write, or at the exit's flush of what stdout
still buffers (so `faasgd up | head -1` ended in a traceback one run in three, as head left before or after
the flush). Here `main` runs with stdout flushed inside, and a BrokenPipeError from a closed stdout (or
stderr) ends it with CLOSED and no traceback; the rest of what it would write goes to /dev/null (the
interpreter flushes stdout once more at exit). A BrokenPipeError of anything else (a socket, a child's pipe)
is raised as it is.

What the command did before that write stays done, and its `finally` blocks have run on the way out, as on
Ctrl-C: `faasgd up` leaves the runtime it started running (it prints only once the runtime serves, its state file
written), as an `up` whose terminal was closed later would; `faasgd train` stops a runtime it started (unless
--keep-up); test.sh stops the runtime it started for the batch, as at any end of a batch.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import Callable

CLOSED = 128 + signal.SIGPIPE  # what a shell shows for a tool that SIGPIPE ended


def quiet_when_closed(main: Callable[[], int]) -> int:
    """`main()`'s exit status, stdout flushed; CLOSED, silently, when a write found stdout or stderr closed."""
    try:
        try:
            return main()
        finally:
            sys.stdout.flush()  # here, not in the interpreter's exit (an argparse --help's SystemExit too)
    except BrokenPipeError:
        if not stdio_closed():
            raise
        for stream in (sys.stdout, sys.stderr):
            if reader_gone(stream):
                to_devnull(stream)
        return CLOSED


def stdio_closed() -> bool:
    """True when nobody reads stdout or stderr any more (a BrokenPipeError then came from there)."""
    return reader_gone(sys.stdout) or reader_gone(sys.stderr)


def reader_gone(stream) -> bool:
    """True when `stream` is a pipe (or socket) whose reading end is closed (poll says POLLERR or POLLHUP)."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poll = select.poll()
    poll.register(descriptor, 0)  # error and hang-up are reported whatever the events asked
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))


def to_devnull(stream) -> None:
    """Point `stream`'s descriptor at /dev/null: what it still buffers goes there at the exit's flush."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)
