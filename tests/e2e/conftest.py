"""Fixtures the end-to-end tests share."""

import pytest


@pytest.fixture
def nothing_written_nothing_died(runtime):
    """After the test: no key in the runtime's stores, and each of its processes alive and never restarted (the
    hostile tests' `runtime`, support.hostile_runtime's, defined by each module that asks for this)."""
    yield
    assert runtime.keys() == 0, "a hostile request wrote to a store"
    runtime.intact()
