"""Fixtures the local runtime's unit tests share."""

import pytest

from support.fake_processes import FakeProcesses


@pytest.fixture
def table(monkeypatch):
    """A fake process table installed in place of psutil's: no process is started or signalled."""
    return FakeProcesses().install(monkeypatch)
