"""What test.sh says of a run whose model scores what always guessing one class does (faasgd.job.result's
guesses_one_class): its line, a note under its configuration's table in output.txt, a line under summary.md's
results. A mean test accuracy over such rounds is no model's skill; the note names the learning rate."""

from __future__ import annotations

from faasgd.config import FIELDS
from faasgd.job.result import one_class_note


def note_of(run: dict) -> str | None:
    """The note for a finished run whose model guesses one class (job.result.one_class_note), else None."""
    if run.get("state") != "done" or not run.get("guesses_one_class") or run.get("final_test_accuracy") is None:
        return None
    learning_rate = (run.get("config") or {}).get("learning_rate", FIELDS["learning_rate"].default)
    return one_class_note(run["final_test_accuracy"], learning_rate)


def summary_lines(configurations: list[tuple[str, list[dict]]]) -> list[str]:
    """summary.md's lines under the results table: one per configuration (label, its runs in round order) with
    rounds whose model guesses one class; none when no round does."""
    lines = []
    for label, group in configurations:
        guessing = [run for run in group if note_of(run)]
        if guessing:
            rate = guessing[0].get("majority_class_rate")
            share = "-" if rate is None else f"{rate:.4f}"
            rounds = ", ".join(str(run["round"]) for run in guessing)
            lines.append(f"- {label}: {len(guessing)} of {len(group)} rounds (round {rounds}): {note_of(guessing[0])}"
                         f" (the most common class is {share} of the test rows)")
    return ["", "Models no better than a constant:", "", *lines] if lines else []
