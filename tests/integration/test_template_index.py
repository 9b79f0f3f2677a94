"""The template's index.py served by waitress in a subprocess, driven over HTTP with urllib.

The tmp dir mirrors /home/app in the image: index.py beside a `function` package whose
handler.py is a small test handler. Every wait has a deadline; the server is stopped at the end.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.integration

TEMPLATE = ROOT / "template" / "python3-http-faasgd"
CORE = TEMPLATE.parents[1] / "src"  # the faasgd core of this tree, which index.py imports
MAX_REQUEST_BYTES = 4096
START_DEADLINE_S = 30
REQUEST_TIMEOUT_S = 10

TEST_HANDLER = textwrap.dedent('''
    class Invalid(Exception):
        http_status = 400

        def __init__(self, field, message):
            self.field = field
            super().__init__(f"{field}: {message}")


    class Unavailable(Exception):
        http_status = 503


    def handle(event, context):
        if event.path == "/boom":
            raise RuntimeError("internal detail that must stay in the logs")
        if event.path == "/invalid":
            raise Invalid("batch_size", "must be an integer in [1, 65536], got 0")
        if event.path == "/unavailable":
            raise Unavailable("store unavailable: redis://redis:6379/0")
        if event.path == "/none":
            return None
        if event.path == "/text":
            return {"statusCode": 201, "body": "created", "headers": {"X-Test": "yes"}}
        return {"statusCode": 200, "body": {
            "method": event.method, "path": event.path, "query": dict(event.query),
            "json": event.json(), "bytes": len(event.body), "hostname": context.hostname,
            "call_id": event.headers.get("X-Call-Id"),
        }}
''')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(url, method="GET", body=None, headers=None):
    """(status, headers, body bytes); HTTP errors are answers too."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


def call_json(url, method="GET", body=None, headers=None):
    status, response_headers, raw = call(url, method, body, headers)
    assert response_headers["Content-Type"] == "application/json", raw
    return status, json.loads(raw)


def wait_until_serving(url, process, stderr_path):
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"index.py exited with {process.returncode}: {stderr_path.read_text()}")
        try:
            call(url + "/none")
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"index.py did not answer within {START_DEADLINE_S}s: {stderr_path.read_text()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Base URL of index.py on a free port, and the path of its stderr."""
    app = tmp_path_factory.mktemp("home-app")
    shutil.copy(TEMPLATE / "index.py", app / "index.py")
    (app / "function").mkdir()
    (app / "function" / "__init__.py").write_text("")
    (app / "function" / "handler.py").write_text(TEST_HANDLER)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{app}{os.pathsep}{CORE}", "upstream_url": f"http://127.0.0.1:{port}", "waitress_threads": "2",
           "max_request_bytes": str(MAX_REQUEST_BYTES), "HOSTNAME": "replica-0"}
    stderr_path = app / "stderr.log"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen([sys.executable, str(app / "index.py")], cwd=app, env=env,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process, stderr_path)
        yield url, stderr_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    assert process.poll() is not None
    with pytest.raises(OSError):
        call(url + "/none")


def test_good_request_reaches_the_handler_and_answers_json(server):
    url, _ = server
    status, body = call_json(url + "/", "POST", b'{"batch_size": 64}', {"X-Call-Id": "c-1"})
    assert status == 200
    assert body == {"method": "POST", "path": "/", "query": {}, "json": {"batch_size": 64}, "bytes": 18,
                    "hostname": "replica-0", "call_id": "c-1"}


def test_empty_body_reads_as_an_empty_object(server):
    url, _ = server
    status, body = call_json(url + "/", "POST", b"")
    assert (status, body["json"]) == (200, {})


def test_bad_json_is_a_400_naming_the_body(server):
    url, _ = server
    status, body = call_json(url + "/", "POST", b'{"batch_size": ')
    assert status == 400
    assert body["field"] == "body"
    assert body["error"].startswith("body: invalid JSON (")


def test_error_with_http_status_keeps_its_status_and_field(server):
    url, _ = server
    assert call_json(url + "/invalid", "POST", b"{}") == (
        400, {"error": "batch_size: must be an integer in [1, 65536], got 0", "field": "batch_size"})
    assert call_json(url + "/unavailable") == (503, {"error": "store unavailable: redis://redis:6379/0"})


def test_unexpected_exception_is_a_500_without_traceback(server):
    url, stderr_path = server
    status, headers, raw = call(url + "/boom", "POST", b"{}", {"X-Call-Id": "c-42"})
    assert status == 500 and headers["Content-Type"] == "application/json"
    assert json.loads(raw) == {"error": "internal error", "call_id": "c-42"}
    assert b"Traceback" not in raw and b"internal detail" not in raw
    assert call_json(url + "/boom") == (500, {"error": "internal error", "call_id": None})
    deadline = time.monotonic() + 5
    while "internal detail" not in stderr_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    logged = stderr_path.read_text()
    assert "Traceback" in logged and "RuntimeError: internal detail" in logged and "[c-42]" in logged


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_any_method_on_a_sub_path_reaches_the_handler(server, method):
    url, _ = server
    status, body = call_json(url + "/jobs/j1/progress?worker_id=3&full=1", method)
    assert status == 200
    assert (body["method"], body["path"], body["query"]) == (method, "/jobs/j1/progress",
                                                             {"worker_id": "3", "full": "1"})


def test_oversize_body_is_a_413_in_json(server):
    url, _ = server
    status, body = call_json(url + "/", "POST", b"x" * (MAX_REQUEST_BYTES + 1))
    assert status == 413
    assert body == {"error": f"body: request body larger than max_request_bytes={MAX_REQUEST_BYTES}",
                    "field": "body"}
    status, body = call_json(url + "/", "POST", b" " * MAX_REQUEST_BYTES)  # the limit itself passes
    assert status == 200


def test_unsupported_method_is_a_405_in_json(server):
    url, _ = server
    status, headers, raw = call(url + "/", "TRACE")
    assert status == 405 and headers["Content-Type"] == "application/json"
    assert headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"
    assert json.loads(raw) == {"error": "method: TRACE is not served here (allowed: DELETE, GET, HEAD, OPTIONS, "
                                        "PATCH, POST, PUT)", "field": "method"}


def test_none_and_text_results(server):
    url, _ = server
    assert call(url + "/none")[::2] == (200, b"")
    status, headers, raw = call(url + "/text")
    assert (status, raw, headers["X-Test"]) == (201, b"created", "yes")
    assert headers["Content-Type"].startswith("text/plain")


# ---- the template's own function/handler_test.py -----------------------------------------

def run_function_tests(tmp_path, handler_source=None):
    """pytest on a copy of the template's function/ laid out as in the image (a package)."""
    function = tmp_path / "function"
    shutil.copytree(TEMPLATE / "function", function)
    (function / "__init__.py").write_text("")
    if handler_source is not None:
        (function / "handler.py").write_text(handler_source)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "function"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_template_handler_tests_pass(tmp_path):
    result = run_function_tests(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_template_handler_tests_skip_a_replaced_handler(tmp_path):
    result = run_function_tests(tmp_path, "def handle(event, context):\n    return None\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 skipped" in result.stdout
