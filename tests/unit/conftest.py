"""Fixtures the unit tests of several packages share."""

import pytest


@pytest.fixture
def anyio_backend():
    """The in-process gateway tests (`pytest.mark.anyio`) run on asyncio alone (anyio's own fixture would run
    each on every backend installed)."""
    return "asyncio"
