"""`faasgd status` and the live progress print what a store or a gateway sends as text: never markup, never raw
control codes (a store is input like any file: anyone who can write to it can write names and messages)."""

from __future__ import annotations

import io

from rich.console import Console

from faasgd.cli import stacking_status
from faasgd.cli.progress import LiveProgress, print_summary, worker_table

HOSTILE = "out[/]x \x1b]0;pwned\x07\x1b[2J[bold red]loud[/]"


def rendered(draw) -> str:
    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, color_system=None, width=400)
    draw(out)
    return buffer.getvalue()


def assert_shown_as_text(text: str) -> None:
    assert "\x1b]0;" not in text and "\x07" not in text and "\x1b[2J" not in text  # nothing reaches the terminal raw
    assert "\\x1b]0;pwned\\x07" in text and "\\x1b[2J" in text  # spelt out instead
    assert "out[/]x" in text and "[bold red]loud[/]" in text  # markup shown as written, never rendered


def test_a_result_with_a_hostile_error_and_worker_state_prints_as_text():
    result = {"job_id": "j", "state": "failed", "error": HOSTILE, "reached_target": False}
    workers = [{"epoch": 1, "state": HOSTILE}]
    assert_shown_as_text(rendered(lambda out: print_summary(result, workers, out)))
    assert_shown_as_text(rendered(lambda out: out.print(worker_table(workers, 3))))


def test_the_live_progress_of_a_pipe_prints_hostile_waiting_messages_and_states_as_text():
    buffer = io.StringIO()
    live = LiveProgress(Console(file=buffer, force_terminal=False, width=400))
    live({"config": {"max_epochs": 3}, "workers": [{"epoch": 1, "state": HOSTILE}],
          "waiting": {"message": HOSTILE}})
    text = buffer.getvalue()
    assert text.count("\\x1b[2J") == 2 and "\x1b[2J" not in text and "out[/]x" in text


def test_a_stacking_status_with_hostile_names_and_error_prints_as_text():
    status = {"job_id": "s", "state": "failed", "error": HOSTILE, "base_scores": [0.5],
              "ensemble_score": 0.6, "config": {"models": [{"model": HOSTILE}], "transfer": HOSTILE},
              "phases": {HOSTILE: 0.1}, "total_s": 0.1}
    text = rendered(lambda out: stacking_status.print_status(status, out))
    assert_shown_as_text(text)
    assert text.count("\\x1b[2J") == 4  # the error, the model's name, the phase, the transfer
