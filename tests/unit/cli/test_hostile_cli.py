"""The `faasgd` command as a hostile caller meets it, in process (faasgd.cli.main.main): a bad flag or value
exits 2 with one line on stderr naming the field, no traceback, nothing on stdout, and nothing started or
written. "Nothing started" is enforced, not hoped for: starting or stopping a runtime, generating a login,
reaching a gateway, opening a store or downloading raises in this test, and the working folder (where
`.faasgd/` would appear) must stay empty.
"""

import pytest

from faasgd.cli.main import main
from support.paths import ROOT

STORE = "redis://127.0.0.1:6379/0"
CASES = {
    # faasgd up
    "up --port words": (["up", "--port", "abc"], "--port"),
    "up --port 70000": (["up", "--port", "70000"], "--port"),
    "up --port -1": (["up", "--port", "-1"], "--port"),
    "up --ack-wait nan": (["up", "--ack-wait", "nan"], "--ack-wait"),
    "up --ack-wait -1": (["up", "--ack-wait", "-1"], "--ack-wait"),
    "up --queue-workers 0": (["up", "--queue-workers", "0"], "--queue-workers"),
    "up --queue-workers x": (["up", "--queue-workers", "x"], "--queue-workers"),
    "up --delivery foo": (["up", "--delivery", "foo"], "--delivery"),
    "up --max-attempts 0": (["up", "--max-attempts", "0"], "max_attempts"),
    "up --retry-wait -1": (["up", "--delivery", "pro", "--retry-wait", "-1"], "retry_wait"),
    "up no stack file": (["up", "-f", "missing.yml", "--port", "0"], "--file"),
    "up a folder as stack": (["up", "-f", ".", "--port", "0"], "--file"),
    "up an unknown flag": (["up", "--bogus"], "--bogus"),
    "up a filter matching nothing": (["up", "--filter", "nothing-*", "--port", "0", "-f", str(ROOT / "stack.yml")],
                                     "--filter"),
    "down an unknown flag": (["down", "--all"], "--all"),
    # faasgd train (through the runtime unless --direct)
    "train workers 0": (["train", "--workers", "0"], "number_of_workers"),
    "train n_push 0": (["train", "--n-push", "0"], "n_push"),
    "train update rule mean": (["train", "--update-rule", "mean"], "update_rule"),
    "train batch words": (["train", "--batch-size", "many"], "batch_size"),
    "train learning rate nan": (["train", "--learning-rate", "nan"], "learning_rate"),
    "train hidden 1e9": (["train", "--hidden-sizes", "1e9"], "hidden_sizes"),
    "train dataset a path": (["train", "--dataset", "../../etc/passwd"], "dataset"),
    "train store_url": (["train", "--store-url", STORE], "store_url"),
    "train local_store_url": (["train", "--local-store-url", "memcached://10.0.0.1:11211"], "local_store_url"),
    "train store a URL": (["train", "--store", STORE], "store"),
    "train renamed mode": (["train", "--mode", "loop"], "mode"),
    "train timeout words": (["train", "--timeout", "abc"], "--timeout"),
    "train timeout -1": (["train", "--timeout", "-1"], "--timeout"),
    "train timeout 0": (["train", "--timeout", "0"], "--timeout"),
    "train port words": (["train", "--port", "abc"], "--port"),
    "train port 70000": (["train", "--port", "70000"], "--port"),
    "train no stack file": (["train", "-f", "missing.yml"], "--file"),
    "train direct, a store by name": (["train", "--direct", "--store", "memcached"], "store"),
    "train direct, a bad store_url": (["train", "--direct", "--store-url", "mongodb://127.0.0.1:27017"], "store_url"),
    "train an unknown flag": (["train", "--batchsize", "3"], "--batchsize"),
    # faasgd scale / invoke / status / logs
    "scale no --replicas": (["scale", "emnist-train"], "--replicas"),
    "scale replicas words": (["scale", "emnist-train", "--replicas", "abc"], "--replicas"),
    "scale replicas -1": (["scale", "emnist-train", "--replicas", "-1"], "--replicas"),
    "scale wait -1": (["scale", "emnist-train", "--replicas", "2", "--wait", "-1"], "--wait"),
    "scale wait nan": (["scale", "emnist-train", "--replicas", "2", "--wait", "nan"], "--wait"),
    "scale a path": (["scale", "../system/functions", "--replicas", "2"], "name"),
    "invoke no name": (["invoke"], "name"),
    "invoke a path": (["invoke", "../system/functions", "--method", "DELETE"], "name"),
    "invoke upper case": (["invoke", "EMNIST-SETUP"], "name"),
    "invoke a bad header": (["invoke", "emnist-setup", "-H", "bad"], "header"),
    "invoke a bad query": (["invoke", "emnist-setup", "--query", "x"], "query"),
    "invoke an unknown method": (["invoke", "emnist-setup", "--method", "BREW"], "--method"),
    "invoke TRACE": (["invoke", "emnist-setup", "--method", "TRACE"], "--method"),
    "invoke timeout 0": (["invoke", "emnist-setup", "--timeout", "0"], "--timeout"),
    "status timeout words": (["status", "j1", "--timeout", "abc"], "--timeout"),
    "status timeout -1": (["status", "j1", "--watch", "--timeout", "-1"], "--timeout"),
    "status a job id path": (["status", "../etc"], "job_id"),
    "status a job id glob": (["status", "j*"], "job_id"),
    "status store_url through a gateway": (["status", "j1", "--store-url", STORE], "store_url"),
    "status store a URL": (["status", "j1", "--store", STORE], "store"),
    "logs a path": (["logs", "../secrets/basic"], "name"),
    "logs a glob": (["logs", "*"], "name"),
    # faasgd data
    "data fetch not emnist": (["data", "fetch", "fashion-mnist"], "dataset"),
    "data fetch ftp": (["data", "fetch", "emnist", "--url", "ftp://example.org/gzip.zip"], "url"),
    "data fetch file": (["data", "fetch", "emnist", "--url", "file:///etc/passwd"], "url"),
    "data fetch a bad sha256": (["data", "fetch", "emnist", "--sha256", "xyz"], "sha256"),
    "data fetch timeout 0": (["data", "fetch", "emnist", "--timeout", "0"], "timeout"),
    "data fetch deadline -1": (["data", "fetch", "emnist", "--deadline", "-1"], "deadline"),
    "data fetch lock-wait -1": (["data", "fetch", "emnist", "--lock-wait", "-1"], "lock_wait"),
    "data an unknown verb": (["data", "wipe"], "data_command"),
    # the command itself
    "no command": ([], "command"),
    "an unknown command": (["rm"], "command"),
}


@pytest.fixture
def nothing_starts(monkeypatch, tmp_path):
    """Every way the CLI starts, stops, logs in, connects or downloads raises; the working folder is empty."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a refused command started, stopped, connected or downloaded something")

    for target in ("faasgd.local.lifecycle.control.up", "faasgd.local.lifecycle.control.down", "faasgd.local.lifecycle.control.login",
                   "faasgd.cli.connect.gateway", "faasgd.cli.train.gateway", "faasgd.cli.status.gateway",
                   "faasgd.api.local_runtime.connect", "faasgd.api.jobs.connect",
                   "faasgd.cli.train.open_store", "faasgd.cli.status.open_store", "faasgd.cli.download.held",
                   "faasgd.cli.data.download_verified", "httpx.Client.send"):
        monkeypatch.setattr(target, forbidden)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    monkeypatch.setenv("FAASGD_EMNIST_ARCHIVE", str(tmp_path / "emnist.zip"))
    return tmp_path


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_flag_exits_2_in_one_line_naming_it_and_starts_nothing(nothing_starts, capsys, case):
    argv, field = CASES[case]
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's own refusals
        code = exit.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("faasgd") and ": error: " in err, err
    assert field in err and "Traceback" not in err, err
    assert out == ""
    assert list(nothing_starts.iterdir()) == []
