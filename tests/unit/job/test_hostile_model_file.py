"""`faasgd evaluate` meets files from outside: zip bombs, lying headers, a FIFO, a device, a bare .npy, text,
a huge --test-samples. Each is refused with one line naming the problem, exit 2, no traceback, before
anything large is inflated (the bomb's memory is measured in a subprocess), and nothing hangs."""

import io
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from faasgd import model
from faasgd.cli.main import main
from faasgd.job import model_file, npz_reader

SIZES = (784, 4, 10)
BOMB_FLOATS = 300_000_000  # 1.2 GB of float32 zeros, deflated to about 1.2 MB
WIDE = (784, (BOMB_FLOATS - 10) // 795, 10)  # an MLP whose parameter count is about BOMB_FLOATS


def npy_header(shape, dtype="<f4") -> bytes:
    """An .npy header (magic included) declaring `shape` of `dtype`, with no data after it."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def fields(sizes=SIZES, **changes) -> dict:
    arrays = {"format": np.int64(1), "sizes": np.array(sizes, np.int64), "activation": np.array("tanh"),
              "dataset": np.array("synthetic"), "job_id": np.array("j1"), "source": np.array("crossing"),
              "version": np.int64(3), "validation_accuracy": np.float64(0.8), "test_accuracy": np.float64(0.7),
              "test_samples": np.int64(50)}
    arrays.update(changes)
    return arrays


def write_model(path, params_member: bytes | None = None, sizes=SIZES, compress=zipfile.ZIP_STORED, **changes):
    """An npz of the small fields as np.savez writes them, then `params` (a whole .npy member) as given."""
    buffer = io.BytesIO()
    np.savez(buffer, **fields(sizes, **changes))
    with zipfile.ZipFile(buffer, "a") as archive:
        if params_member is None:
            params_member = npy_bytes(np.zeros(model.param_count(sizes), np.float32))
        archive.writestr("params.npy", params_member, compress_type=compress)
    path.write_bytes(buffer.getvalue())
    return path


def npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.fixture
def bomb(tmp_path):
    """An npz whose deflated `params` holds 1.2 GB of zeros, its sizes those of a network that large."""
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for field, value in fields(WIDE).items():
            archive.writestr(f"{field}.npy", npy_bytes(value))
        with archive.open("params.npy", "w", force_zip64=True) as member:
            member.write(npy_header((BOMB_FLOATS,)))
            zeros = bytes(1 << 24)
            for _ in range(BOMB_FLOATS * 4 // len(zeros)):
                member.write(zeros)
    assert path.stat().st_size < 2 << 20  # a small file...
    with zipfile.ZipFile(path) as archive:
        assert archive.getinfo("params.npy").file_size > 1.1e9  # ...that inflates to 1.2 GB
    return path


def peak_rss_mib(*argv) -> tuple[int, float, str]:
    """`faasgd evaluate ARGV` in a fresh interpreter: its exit code, its peak resident memory and stderr."""
    code = ("import resource, sys\nfrom faasgd.cli.main import main\ncode = main(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code, "evaluate", *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return done.returncode, float(done.stdout.split()[-1]), done.stderr


def one_line_refusal(err: str, *words: str) -> None:
    assert err.startswith("faasgd: error: ") and err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    assert all(word in err for word in words), err


def test_a_zip_bomb_is_refused_before_it_is_inflated(bomb, tmp_path):
    baseline = tmp_path / "notes.txt"
    baseline.write_text("a text file: refused at once, so its peak is the interpreter's and faasgd's imports\n")
    code, floor, err = peak_rss_mib(str(baseline))
    assert code == 2 and "a text file" in err
    code, peak, err = peak_rss_mib(str(bomb))
    assert code == 2
    one_line_refusal(err, "model: field params declares 1,191,182,464 bytes")
    assert peak < floor + 40, (peak, floor)  # MiB; inflating the bomb would add 1,144 MiB


def test_a_header_declaring_4e9_floats_is_refused_without_allocating(tmp_path, capsys):
    lying = write_model(tmp_path / "lying.npz", npy_header((4_000_000_000,)))
    assert main(["evaluate", str(lying)]) == 2
    one_line_refusal(capsys.readouterr().err, "declares shape (4000000000,)")
    huge = write_model(tmp_path / "huge.npz", npy_header((4_000_000_000,)), sizes=(784, 5_000_000, 10))
    assert main(["evaluate", str(huge)]) == 2
    one_line_refusal(capsys.readouterr().err, "3,975,000,010 parameters", f"({npz_reader.MAX_PARAMS:,})")


def test_a_directory_that_lies_about_a_member_is_refused(tmp_path, capsys):
    """params.npy's header and directory entry declare 4 floats; its deflated stream holds the whole network's:
    the reader stops at the declared size and the CRC fails."""
    header = npy_header((4,))
    path = write_model(tmp_path / "lie.npz", header + bytes(4 * model.param_count(SIZES)),
                       compress=zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    central = raw.rindex(b"PK\x01\x02")  # params.npy's directory entry: the last one written
    assert raw[central + 46:central + 56] == b"params.npy"
    raw[central + 24:central + 28] = (len(header) + 16).to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(raw))
    assert main(["evaluate", str(path)]) == 2
    one_line_refusal(capsys.readouterr().err, "model: ", "CRC")


@pytest.mark.parametrize("kind, words", [("fifo", "is a FIFO"), ("device", "is a character device"),
                                         ("folder", "is a folder"), ("npy", "a bare .npy array"),
                                         ("text", "a text file"), ("binary", "not a zip"),
                                         ("sparse", "more than a model file can be"),
                                         ("entries", "declares 20 entries")])
def test_a_file_that_is_not_a_model_is_one_line_and_never_hangs(tmp_path, kind, words):
    path = tmp_path / "m.npz"
    if kind == "fifo":
        os.mkfifo(path)  # no writer ever opens it
    elif kind == "device":
        path = "/dev/zero"
    elif kind == "folder":
        path.mkdir()
    elif kind == "npy":
        path.write_bytes(npy_bytes(np.zeros(model.param_count(SIZES), np.float32)))
    elif kind == "text":
        path.write_text("params,sizes\n1,2\n" * 10)
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(npz_reader.MAX_FILE_BYTES + 1)  # a hole: no disk used
    else:
        with zipfile.ZipFile(path, "w") as archive:
            for i in range(20):
                archive.writestr(f"f{i}.npy", b"")
    code, _, err = peak_rss_mib(str(path))  # a subprocess with a timeout: a hang fails the test
    assert code == 2
    one_line_refusal(err, "model: ", words)


def test_test_samples_are_bounded_by_the_data_set(tmp_path, capsys):
    good = write_model(tmp_path / "good.npz")
    assert main(["evaluate", str(good), "--test-samples", "1000000000000"]) == 2
    one_line_refusal(capsys.readouterr().err, "test_samples: synthetic has 10,000 test rows")
    assert main(["evaluate", str(write_model(tmp_path / "claims.npz", test_samples=np.int64(10 ** 12)))]) == 2
    one_line_refusal(capsys.readouterr().err, "field test_samples must be in")
    assert main(["evaluate", str(good), "--test-samples", "200", "--json"]) == 0
    assert '"rows": 200' in capsys.readouterr().out
    assert model_file.from_npz(str(good)).sizes == SIZES
