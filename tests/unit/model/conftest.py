"""The cnn's tests skip without TensorFlow, which they import when they run, not when pytest collects them: the
import costs ~7 CPU-seconds, and each xdist worker of `make test` collects every file while only one runs these."""

import pytest


@pytest.fixture(scope="module")
def tensorflow():
    """The tensorflow module, or the test skipped saying it is not installed."""
    return pytest.importorskip("tensorflow")
