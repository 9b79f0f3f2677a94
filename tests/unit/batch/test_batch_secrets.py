"""test.sh keeps store passwords out of everything it writes or prints, and bad input writes nothing.

In process: a fake target whose store calls fail with messages quoting the password URL, the real
run_batch, every output writer, the dry run and main's error paths.
"""

from __future__ import annotations

import datetime
import json

import pytest

from faasgd.batch.__main__ import dry_run, main
from faasgd.batch.matrix import parse_matrix_text
from faasgd.batch.outputs import RESULTS_DIR, output_folder, write_matrix_copy, write_outputs
from faasgd.batch.redact import Redactor
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import Target
from faasgd.errors import FaasgdError, StoreUnavailable

PASSWORD = "s3cr3t-Pa55word"
ENCODED, DECODED = "p%40ss%2Fw0rd", "p@ss/w0rd"  # a percent-encoded password and what it decodes to
URL = f"redis://:{PASSWORD}@127.0.0.1:6390/0"
MATRIX = f"""
name: secrets
description: the functions' stores are {URL} and redis://:{ENCODED}@127.0.0.1:6391/0
rounds: 1
fixed: {{dataset: synthetic, train_samples: 100, test_samples: 50, max_epochs: 1}}
matrix:
  store: [redis, memcached, default]
  number_of_workers: [1, 2]
"""
SECRETS = (PASSWORD, ENCODED, DECODED)


class FailingTarget(Target):
    """A target whose every run fails the way a real one may: an error quoting the store URL."""

    name = "fake"

    def set_replicas(self, replicas: int) -> None:
        raise StoreUnavailable(URL.replace(PASSWORD, DECODED), f"AUTH {PASSWORD} refused; also tried {URL}")


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}"


def test_every_output_file_and_printed_line_is_redacted(tmp_path, capsys):
    redactor = Redactor.of(MATRIX)
    matrix = parse_matrix_text(MATRIX, "secrets")
    runs = run_batch(matrix, FailingTarget(), matrix.rounds, 1.0, redactor.say)
    assert len(runs) == 6 and all(r["state"] == "failed" for r in runs)
    assert PASSWORD in json.dumps(runs)  # the records hold the target's error as it came
    meta = {"name": matrix.name, "matrix_file": "secrets.yml", "matrix": matrix.source, "target": "fake",
            "rounds": 1, "versions": {}, "seeds": [0],
            "failures": [{"config_id": r["config_id"], "configuration": r["configuration"], "round": 1,
                          "error": r["error"]} for r in runs]}
    write_matrix_copy(tmp_path, MATRIX, redactor)
    write_outputs(tmp_path, runs, meta, redactor)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["matrix.yml", "meta.json", "output.txt", "runs.csv", "runs.json", "summary.md"]
    for path in tmp_path.iterdir():
        assert_no_secret(path.read_bytes().decode("utf-8", "replace"), path.name)
    printed = capsys.readouterr()
    assert printed.out.count("FAILED") == 6
    assert_no_secret(printed.out + printed.err, "printed lines")
    assert "redis://:***@127.0.0.1:6390/0" in (tmp_path / "runs.csv").read_text()  # masked, still there (the errors)
    assert "redis://:***@127.0.0.1:6390/0" in (tmp_path / "matrix.yml").read_text()


def test_plot_labels_get_the_masked_url(tmp_path):
    redactor = Redactor.of(MATRIX)
    runs = [{"config_id": i, "configuration": f"store={URL}", "varying": {"store": URL, "number_of_workers": w},
             "round": 1, "config": {"store_url": URL, "number_of_workers": w, "n_fetch": 1, "n_push": 1,
                                    "target_accuracy": 0.5},
             "store": URL, "state": "done", "reached_target": True, "time_to_target_s": 1.0 + i,
             "final_test_accuracy": 0.6, "epochs": 1.0, "curve": [[0.5, 0.4], [1.0 + i, 0.6]]} for i, w in enumerate((1, 2))]
    seen = []
    import matplotlib.figure
    import matplotlib.text

    original = matplotlib.figure.Figure.savefig

    def spy(self, *args, **kwargs):  # every text a saved figure shows: titles, labels, legends, annotations
        seen.extend(t.get_text() for t in self.findobj(matplotlib.text.Text))
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matplotlib.figure.Figure, "savefig", spy)
        written = write_outputs(tmp_path, runs, {"name": "p", "rounds": 1}, redactor)
    assert written and seen and any("***" in label for label in seen)
    assert_no_secret(" ".join(seen), "plot labels")


def test_dry_run_prints_masked_values(capsys):
    redactor = Redactor.of(MATRIX)
    dry_run(parse_matrix_text(MATRIX, "secrets"), redactor.say)
    out = capsys.readouterr().out
    assert "6 run(s)" in out and "store=memcached" in out
    assert_no_secret(out, "the dry run")


def test_a_bad_value_quoting_a_secret_is_refused_masked(tmp_path, capsys):
    matrix = tmp_path / "bad.yml"
    matrix.write_text(f"matrix: {{dataset: ['{URL}'], store: ['{URL}']}}\n")
    assert main([str(matrix), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("test.sh: error: dataset: ") and err.count("\n") == 1
    assert_no_secret(err, "the error")


def test_redactor_masks_urls_in_any_text_and_the_matrix_passwords_anywhere():
    redactor = Redactor.of(MATRIX)
    assert redactor.text(f"failed: {URL}.") == "failed: redis://:***@127.0.0.1:6390/0."
    assert redactor.text("http://admin:hunter2@gateway:8080/x") == "http://admin:***@gateway:8080/x"
    assert redactor.text(f"AUTH {PASSWORD} and {DECODED}") == "AUTH *** and ***"
    assert redactor.value({"a": [URL, 3, None], URL: (1.5,)}) == {
        "a": ["redis://:***@127.0.0.1:6390/0", 3, None], "redis://:***@127.0.0.1:6390/0": [1.5]}


@pytest.mark.parametrize("argv, field", [
    (["--rounds", "0"], "rounds"), (["--rounds", "-2"], "rounds"), (["--max-runs", "1"], "runs"),
    (["--max-runs", "0"], "max_runs"), (["--run-timeout", "0"], "run_timeout"), (["--port", "0"], "port"),
    (["--target", "cluster"], "OPENFAAS_URL"),
])
def test_bad_input_exits_2_naming_the_field_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, field):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENFAAS_URL", raising=False)
    (tmp_path / "m.yml").write_text("name: ok\nrounds: 2\nfixed: {dataset: synthetic}\n")
    assert main(["m.yml", "--out", "out", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"test.sh: error: {field}") and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yml"]  # no output folder, no results/


def test_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["m.yml", "--rounds", "two"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err == "test.sh: error: argument --rounds: invalid int value: 'two'\n"


def test_the_default_folder_is_under_results_and_out_is_where_the_user_says(tmp_path):
    started = datetime.datetime(2024, 5, 6, 7, 8, 9)
    assert output_folder(None, "small", started) == RESULTS_DIR / "20240506-070809-small"
    assert output_folder(str(tmp_path / "x" / "y"), "small", started) == tmp_path / "x" / "y"
    (tmp_path / "file").write_text("")
    with pytest.raises(FaasgdError) as info:
        output_folder(str(tmp_path / "file"), "small", started)
    assert info.value.field == "out"
    with pytest.raises(FaasgdError) as info:
        output_folder(None, "../up", started)
    assert info.value.field == "name"
