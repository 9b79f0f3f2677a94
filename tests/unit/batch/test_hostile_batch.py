"""./test.sh as a hostile caller meets it, in process (faasgd.batch.__main__.main, what test.sh execs): a bad
matrix file or flag exits 2 with one line on stderr naming the field, nothing on stdout, no runtime
started, no output folder made (neither --out nor results/), and a password in the matrix never printed.
The matrices are run for real (no --dry-run): the checks, not a listing mode, must stop them; huge
matrices and files are refused within loose time and memory bounds, before they are enumerated or read.
"""

import os
import threading
import time
import tracemalloc

import pytest

from faasgd.batch import bounds
from faasgd.batch.__main__ import main

OK = "name: ok\nfixed: {dataset: synthetic}\n"
PASSWORD = "hunter2-matrix"
WIDE = "name: huge\nmatrix:\n" + "".join(f"  {key}: [{', '.join(map(str, range(1, 11)))}]\n" for key in (
    "batch_size", "n_fetch", "n_push", "max_epochs", "seed", "lease_s", "train_samples", "test_samples",
    "number_of_workers", "hidden_sizes"))
MATRICES = {  # (matrix text, extra flags, field)
    "name climbs": ("name: ../evil\n", [], "name"),
    "name a path": ("name: a/b\n", [], "name"),
    "name hidden": ("name: .hidden\n", [], "name"),
    "name ..": ("name: '..'\n", [], "name"),
    "name 65 long": (f"name: {'x' * 65}\n", [], "name"),
    "name a flag": ("name: -rf\n", [], "name"),
    "name unicode": ("name: név\n", [], "name"),
    "name a space": ("name: a b\n", [], "name"),
    "name a list": ("name: [a, b]\n", [], "name"),
    "an unknown top key": (OK + "runs: 5\n", [], "runs"),
    "an unknown fixed key": ("fixed: {batchsize: 3}\n", [], "fixed.batchsize"),
    "an unknown matrix key": ("matrix: {n_fetsh: [1]}\n", [], "matrix.n_fetsh"),
    "the renamed mode": ("matrix: {mode: [loop]}\n", [], "matrix.mode"),
    "a key in fixed and matrix": ("fixed: {n_push: 1}\nmatrix: {n_push: [1, 2]}\n", [], "matrix.n_push"),
    "an empty axis": ("matrix: {number_of_workers: []}\n", [], "matrix.number_of_workers"),
    "together not in matrix": ("matrix: {n_push: [1]}\ntogether: [[n_fetch]]\n", [], "together"),
    "together uneven": ("matrix: {n_push: [1], n_fetch: [1, 2]}\ntogether: [[n_fetch, n_push]]\n", [], "together"),
    "a bad value": ("matrix: {batch_size: [0]}\n", [], "batch_size"),
    "a store URL for a name": (f"matrix: {{store: ['redis://:{PASSWORD}@127.0.0.1:6379/0']}}\n", [], "store"),
    "store_url": (f"fixed: {{store_url: 'redis://:{PASSWORD}@10.0.0.1:6379/0'}}\n", [], "store_url"),
    "local_store_url": ("matrix: {local_store_url: ['memcached://10.0.0.1:11211']}\n", [], "local_store_url"),
    "a store name climbs": ("fixed: {store: ../x}\n", [], "store"),
    "10^10 runs": (WIDE, [], "runs"),
    "rounds 0": (OK + "rounds: 0\n", [], "rounds"),
    "rounds 1001": (OK + "rounds: 1001\n", [], "rounds"),
    "rounds a string": (OK + "rounds: '3'\n", [], "rounds"),
    "rounds 10^20": (OK + "rounds: 100000000000000000000\n", [], "rounds"),
    "--rounds 0": (OK, ["--rounds", "0"], "rounds"),
    "--rounds -3": (OK, ["--rounds", "-3"], "rounds"),
    "--max-runs 0": (OK, ["--max-runs", "0"], "max_runs"),
    "over --max-runs": ("rounds: 3\nmatrix: {number_of_workers: [1, 2]}\n", ["--max-runs", "5"], "runs"),
    "a python tag": ("!!python/object/apply:os.system ['touch pwned']\n", [], "matrix"),
    "invalid YAML": ("matrix: {a: [1, 2\n", [], "matrix"),
    "a list": ("[1, 2]\n", [], "matrix"),
    "a scalar": ("42\n", [], "matrix"),
    "YAML 20000 deep": ("matrix: " + "[" * 20000 + "]" * 20000 + "\n", [], "matrix"),
    "a mapping 3000 deep": ("matrix: {seed: " + "{a: " * 3000 + "1" + "}" * 3000 + "}\n", [], "matrix"),
}
FLAGS = {  # (extra flags, field): the matrix itself is fine
    "port 0": (["--port", "0"], "port"), "port 70000": (["--port", "70000"], "port"),
    "run timeout -1": (["--run-timeout", "-1"], "run_timeout"), "run timeout nan": (["--run-timeout", "nan"], "run_timeout"),
    "target unknown": (["--target", "aws"], "--target"), "rounds words": (["--rounds", "abc"], "--rounds"),
    "an unknown flag": (["--bogus"], "--bogus"), "out a file": (["--out", "afile"], "out"),
    "out empty": (["--out", ""], "out"), "out in /proc": (["--out", "/proc/self/x"], "out"),
    "out /proc/self": (["--out", "/proc/self"], "out"), "out under a file": (["--out", "afile/sub"], "out"),
    "max-runs 1e12": (["--max-runs", "1e12"], "max_runs"), "max-runs words": (["--max-runs", "many"], "max_runs"),
    "max-runs 1.5": (["--max-runs", "1.5"], "max_runs"), "cluster without a gateway": (["--target", "cluster"], "OPENFAAS_URL"),
    "no stack file": (["--stack", "missing.yml"], "stack"), "a folder as stack": (["--stack", "."], "stack"),
}


@pytest.fixture
def batch(monkeypatch, tmp_path):
    """A working folder holding `afile` and a stack file; starting a runtime or a run raises."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a refused batch started something")

    for target in ("faasgd.local.lifecycle.control.up", "faasgd.local.lifecycle.control.down", "faasgd.batch.__main__.run_batch"):
        monkeypatch.setattr(target, forbidden)
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "stack.yml").write_text("# stands for the stack: these batches never read it\n")
    return tmp_path


def refused(batch, capsys, argv, field):
    before = sorted(p.name for p in batch.iterdir())
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's own refusals
        code = exit.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err[-2000:])
    assert err.startswith("test.sh: error: ") and err.count("\n") == 1, err[-2000:]
    named = err[len("test.sh: error: "):].split(": ")[0]  # FIELD, "argument FLAG" or "unrecognized arguments"
    assert named in (field, f"argument {field}") or err.startswith(f"test.sh: error: unrecognized arguments: {field}")
    assert "Traceback" not in err and PASSWORD not in err and out == ""
    assert sorted(p.name for p in batch.iterdir()) == before
    return err


@pytest.mark.parametrize("case", list(MATRICES))
def test_a_bad_matrix_exits_2_in_one_line_and_writes_nothing(batch, capsys, case):
    text, flags, field = MATRICES[case]
    (batch / "m.yml").write_text(text)
    refused(batch, capsys, [str(batch / "m.yml"), *flags, "--out", str(batch / "out")], field)
    refused(batch, capsys, [str(batch / "m.yml"), *flags], field)  # the default folder, under results/


@pytest.mark.parametrize("case", list(FLAGS))
def test_a_bad_flag_exits_2_in_one_line_and_writes_nothing(batch, capsys, case):
    flags, field = FLAGS[case]
    (batch / "m.yml").write_text(OK)
    refused(batch, capsys, [str(batch / "m.yml"), *flags], field)


@pytest.mark.parametrize("content", [b"\xff\xfe", None, "folder"])
def test_a_matrix_file_that_cannot_be_read_exits_2(batch, capsys, content):
    path = batch / "m.yml"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    refused(batch, capsys, [str(path)], "matrix")


def bounded(batch, capsys, argv, field, seconds=5.0, mib=20.0):
    """Refused as `refused` is, within `seconds` and `mib` of Python allocations at peak."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        err = refused(batch, capsys, argv, field)
        peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < seconds and peak < mib, (time.monotonic() - started, peak)
    return err


@pytest.mark.parametrize("flags", [["--max-runs", "1e12"], ["--max-runs", str(bounds.MAX_RUNS)], []])
@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_10_to_the_10_configurations_are_never_enumerated(batch, capsys, flags, dry):
    (batch / "m.yml").write_text(WIDE)
    bounded(batch, capsys, [str(batch / "m.yml"), *flags, *dry], "max_runs" if "1e12" in flags else "runs")


def test_a_60_mb_matrix_is_refused_at_once_naming_the_limit(batch, capsys):
    with open(batch / "m.yml", "w") as f:
        f.write("name: big\nmatrix:\n  seed:\n")
        f.writelines(["    - 1234567890\n"] * 3_800_000)  # 60 MB of a valid YAML list
    assert (batch / "m.yml").stat().st_size > 60e6
    err = bounded(batch, capsys, [str(batch / "m.yml"), "--dry-run"], "matrix", seconds=2.0)
    assert f"more than a matrix file may be ({bounds.MAX_MATRIX_BYTES:,})" in err


def test_an_oversized_matrix_names_the_limit(batch, capsys):
    (batch / "m.yml").write_text("name: big\n#" + "x" * bounds.MAX_MATRIX_BYTES + "\n")
    assert main([str(batch / "m.yml"), "--dry-run"]) == 2
    assert f"more than a matrix file may be ({bounds.MAX_MATRIX_BYTES:,})" in capsys.readouterr().err


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded(batch, capsys):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (batch / "m.yml").write_text("name: laughs\ndescription:\n" + "".join(f"  {line}\n" for line in levels))
    err = bounded(batch, capsys, [str(batch / "m.yml")], "matrix")  # 10^9 values once expanded
    assert f"more than {bounds.MAX_VALUES:,} values" in err


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_matrix_that_is_not_a_regular_file_is_refused_without_hanging(batch, capsys, kind):
    path = batch / "m.yml"
    if kind == "fifo":
        os.mkfifo(path)  # no writer ever opens it
    else:
        path = "/dev/zero"
    answer = []
    worker = threading.Thread(target=lambda: answer.append(main([str(path), "--dry-run"])), daemon=True)
    worker.start()
    worker.join(10)
    assert answer == [2], "test.sh hung on the matrix file" if worker.is_alive() else answer
    assert "matrix: cannot read" in capsys.readouterr().err


def test_a_dry_run_refuses_the_out_a_real_run_would(batch, capsys):
    (batch / "m.yml").write_text(OK)
    for out in ("afile", "/proc/self/x", "afile/sub"):
        refused(batch, capsys, [str(batch / "m.yml"), "--dry-run", "--out", out], "out")
    assert main([str(batch / "m.yml"), "--dry-run", "--out", str(batch / "new" / "folder")]) == 0
    assert sorted(p.name for p in batch.iterdir()) == ["afile", "m.yml", "stack.yml"]  # the probe left nothing
