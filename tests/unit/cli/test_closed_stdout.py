"""A closed stdout (`faasgd ... | head -1`, `./test.sh --dry-run | head`) ends the command quietly: exit 141, as a
Unix tool SIGPIPE ended, and nothing on stderr; a BrokenPipeError of anything else is raised as it is."""

from __future__ import annotations

import subprocess
import sys

import pytest

from faasgd.closed_stdout import CLOSED, quiet_when_closed
from support.closed_pipe import run_into_a_closed_pipe
from support.paths import ROOT


@pytest.mark.parametrize("argv", [["-m", "faasgd.cli", "data", "list"], ["-m", "faasgd.cli", "data", "list", "--json"],
                                  ["-m", "faasgd.batch", "--dry-run"]],
                         ids=["faasgd data list (rich)", "faasgd data list --json", "test.sh --dry-run"])
def test_a_command_writing_to_a_closed_stdout_ends_quietly_with_141(argv):
    ended = run_into_a_closed_pipe([sys.executable, *argv], cwd=ROOT)
    assert (ended.returncode, ended.stderr) == (CLOSED, "") == (141, "")


def test_the_same_commands_still_print_when_read():
    listed = subprocess.run([sys.executable, "-m", "faasgd.batch", "--dry-run"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0 and "run(s)" in listed.stdout.splitlines()[0]


def test_a_broken_pipe_of_anything_but_stdio_is_raised_as_it_is():
    def main():
        raise BrokenPipeError(32, "a socket's reader went away")

    with pytest.raises(BrokenPipeError, match="a socket"):
        quiet_when_closed(main)


def test_main_s_exit_status_is_kept():
    assert quiet_when_closed(lambda: 3) == 3
