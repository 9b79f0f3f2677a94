"""The template's index.py in-process: its Flask app (the real shim: body parsing, JSON errors, 405 with
Allow, 413) in front of a function folder's handler.py, driven with Flask's test client. No socket, no
subprocess, no sleep; the handler runs in the shim's own call thread, as in a replica.

    shim = load_shim("emnist-setup")
    answer = shim.client.post("/", data=b"{}", content_type="application/json")
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from support.handlers import ROOT, load_handler

INDEX = ROOT / "template" / "python3-http-faasgd" / "index.py"


@dataclass
class Shim:
    module: object  # index.py as a module (its `replica`, `handler`, `app`, MAX_REQUEST_BYTES)
    client: object  # flask.testing.FlaskClient

    def ready(self) -> bool:
        """The replica still says it is ready (what `/_/ready` answers: nothing stopped or broke it)."""
        return self.client.get("/_/ready").status_code == 200


def load_shim(function: str) -> Shim:
    """A fresh index.py module serving `function`'s handler.py, marked ready as after load_handler()."""
    spec = importlib.util.spec_from_file_location(f"index_{function.replace('-', '_')}", INDEX)
    module = importlib.util.module_from_spec(spec)
    root = logging.getLogger()
    handlers, level, environ = list(root.handlers), root.level, dict(os.environ)
    with threadpool_limits(limits=None):  # its BLAS threads (faasgd.cpu_limit) are a replica's, not the tests'
        spec.loader.exec_module(module)  # nor may its logging.basicConfig change the test process's logging
    root.handlers[:], root.level = handlers, level
    os.environ.clear()
    os.environ.update(environ)
    module.handler = load_handler(function)
    module.replica.ready.set()
    return Shim(module, module.app.test_client())
