"""faasgd imports redis-py without OpenTelemetry's metrics SDK (store/redis_lib.py), which stays importable."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_redis_comes_without_the_metrics_sdk_which_stays_importable():  # the SDK: the `traces` extra, in `make`'s venv
    code = ("import sys\n"
            "import faasgd.store.redis_store\n"
            "print('redis' in sys.modules, 'opentelemetry.sdk.metrics' in sys.modules)\n"
            "import opentelemetry.sdk.metrics\n"
            "print(opentelemetry.sdk.metrics.MeterProvider.__name__)\n")
    assert run(code).splitlines() == ["True False", "MeterProvider"]


def test_the_metrics_sdk_already_loaded_is_left_alone():
    code = ("import sys, opentelemetry.sdk.metrics as before\n"
            "from faasgd.store.redis_lib import redis\n"
            "print(sys.modules['opentelemetry.sdk.metrics'] is before)\n")
    assert run(code) == "True"
