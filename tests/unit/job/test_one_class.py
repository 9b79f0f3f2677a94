"""A model whose test accuracy is what always guessing one class scores says so, naming the learning rate: in the
result record, the CLI's summary and test.sh's outputs (the per-run line, output.txt, summary.md).

Seen on LambdaML's rcv1-like task at learning_rate 0.1: three algorithms ended at test accuracy 0.529, the share
of its most common class, and nothing said so.
"""

import io

import numpy as np
import pytest
from rich.console import Console

from faasgd.batch.report import configuration_table, table_notes, write_output_txt, write_summary_md
from faasgd.batch.runs import _outcome
from faasgd.cli.progress import print_summary
from faasgd.config import TrainConfig
from faasgd.job.result import MEASURES, Outcome, build_result, class_shares

META = {"job_id": "j", "created_at": 1000.0, "train_rows": 400, "server_cpu_s": None}
TEST_LABELS = np.array([0] * 1058 + [1] * 942)  # rcv1-like's 2,000 test rows: 0.529 of them class 0


def result_at(test_accuracy, learning_rate=0.1, error=None):
    config = TrainConfig(number_of_workers=1, learning_rate=learning_rate, target_accuracy=0.85)
    progress = {0: {"state": "failed" if error else "finished", "samples": 800, "intervals": [[1000.0, 1010.0]]}}
    final = {"validation": 0.52, "test": test_accuracy, "version": 40}
    return build_result(config, META, progress, None, Outcome(final, error, now=1011.0, shares=class_shares(TEST_LABELS)))


@pytest.mark.parametrize("accuracy", [0.529, 0.5265, 0.471, 0.4745])  # either class, within 0.005 of its share
def test_a_result_at_what_guessing_one_class_scores_says_so_and_names_the_learning_rate(accuracy):
    result = result_at(accuracy, learning_rate=0.1)
    assert {"majority_class_rate", "guesses_one_class"} <= set(MEASURES)
    assert result["majority_class_rate"] == pytest.approx(0.529) and result["guesses_one_class"] is True
    assert "always guessing one class" in result["warning"] and "learning_rate 0.1 " in result["warning"]
    assert f"{accuracy:.4f}" in result["warning"]


@pytest.mark.parametrize("accuracy", [0.5345, 0.70, 0.4655, 0.86])
def test_a_result_away_from_every_class_share_has_no_warning(accuracy):
    result = result_at(accuracy)
    assert result["guesses_one_class"] is False and result["warning"] is None
    assert result["majority_class_rate"] == pytest.approx(0.529)


def test_without_the_test_rows_nothing_is_claimed_and_a_failed_job_keeps_its_error_alone():
    config = TrainConfig(number_of_workers=1)
    result = build_result(config, META, {0: None}, None, Outcome(error="store gone", now=1011.0))
    assert result["majority_class_rate"] is None and result["guesses_one_class"] is None and result["warning"] is None
    assert result_at(0.529, error="worker 0 failed")["warning"] is None


def test_the_cli_summary_shows_the_warning_under_the_accuracies():
    buffer = io.StringIO()
    print_summary(result_at(0.529, learning_rate=0.1), None, Console(file=buffer, width=200, force_terminal=False))
    lines = buffer.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("model accuracy"))
    assert lines[at + 1].startswith("warning") and "always guessing one class" in lines[at + 1]
    assert "learning_rate 0.1 " in lines[at + 1]


def run_of(round_, accuracy, learning_rate=0.1):
    result = result_at(accuracy, learning_rate)
    config = TrainConfig(number_of_workers=1, learning_rate=learning_rate, target_accuracy=0.85).to_dict()
    return {**result, "config_id": 0, "configuration": f"learning_rate={learning_rate}", "round": round_,
            "config": config, "store": "redis", "placement": [None], "curve": [], "test_curve": []}


def test_the_batch_says_which_rounds_guess_one_class_in_its_line_output_txt_and_summary_md(tmp_path):
    runs = [run_of(1, 0.529), run_of(2, 0.81)]
    assert "always guessing one class" in _outcome(runs[0]) and "learning_rate 0.1 " in _outcome(runs[0])
    assert "always guessing one class" not in _outcome(runs[1])
    notes = table_notes(runs)
    assert [n for n in notes if "always guessing one class" in n] and all(
        n.startswith("round 1: ") for n in notes if "always guessing one class" in n)
    assert "0.5290" in configuration_table(runs)
    write_output_txt(runs, {"name": "lr"}, tmp_path / "output.txt")
    assert "round 1: test accuracy 0.5290 is what always guessing one class scores" in \
        (tmp_path / "output.txt").read_text()
    write_summary_md(runs, {"name": "lr", "rounds": 2}, tmp_path / "summary.md", {})
    summary = (tmp_path / "summary.md").read_text()
    assert "learning_rate=0.1: 1 of 2 rounds (round 1)" in summary and "learning_rate 0.1 " in summary
    assert "0.5290 of the test rows" in summary
