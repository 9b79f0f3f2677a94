"""moto's S3-compatible server for the benches: the tests' launcher (tests/support/s3_server.py), not a copy.

    server = start_s3(); settings = settings_for(server); make_bucket(settings, "lambdaml"); ... server.stop()

The launcher lives with the tests (it is test tooling, not part of faasgd.local); the benches run from the
repository, so this module puts tests/ on sys.path (a spawned worker process inherits that path).
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from support.s3_server import make_bucket, settings_for, start_s3  # noqa: E402

__all__ = ["make_bucket", "settings_for", "start_s3"]
