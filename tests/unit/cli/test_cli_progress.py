"""What the `faasgd` command prints: live progress (a line per epoch where nothing can be redrawn) and the summary."""

import io

from rich.console import Console

from faasgd.cli.progress import LiveProgress, print_summary
from faasgd.job.result import missing


def plain():
    buffer = io.StringIO()
    return buffer, Console(file=buffer, width=160, force_terminal=False)


def status(epochs, state="running"):
    workers = [{"epoch": e, "accuracy": 0.8 + e / 100, "loss": 0.5, "samples_per_s": 1000.0, "pushes": 10 * e,
                "fetches": 11 * e, "conflicts": e, "state": state} for e in epochs]
    return {"state": "running", "config": {"max_epochs": 20}, "workers": workers}


def test_without_a_terminal_a_labelled_line_is_printed_when_a_workers_epoch_changes():
    buffer, console = plain()
    live = LiveProgress(console)
    live(status([1, 1]))
    live(status([1, 1]))  # nothing new: nothing printed
    live(status([2, 1]))
    live({"state": "running", "config": None, "workers": []})  # the store did not answer this time
    live.close()
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[-1].startswith("worker  0  epoch    2/20  validation accuracy 0.8200") and "conflicts 2" in lines[-1]


def test_the_summary_shows_each_worker_and_the_result_and_a_failure_says_why():
    buffer, console = plain()
    result = {**missing("j1", "no result"), "state": "done", "error": None, "final_validation_accuracy": 0.8525,
              "final_test_accuracy": 0.8412, "reached_target": True, "epochs_to_target": 5.0, "samples_to_target": 300000,
              "wall_s": 14.5, "target_accuracy": 0.85, "time_to_target_s": 12.34, "epochs": 5.5,
              "samples": 330000, "samples_per_s": 27000.0, "pushes": 278, "fetches": 283, "conflicts": 9,
              "retries": 0, "staleness_p50": 1.0, "staleness_p99": 4.0}
    print_summary(result, status([6, 5], "finished")["workers"], console)
    text = buffer.getvalue()
    assert "job j1: done" in text and "validation 0.8525   test 0.8412  (kept at the crossing; target 0.85" in text
    assert "to target        12.3 s   epochs 5.00   samples 300,000" in text and "conflicts 9" in text
    assert "in total         14.5 s   epochs 5.50   samples 330,000" in text
    assert len([line for line in text.splitlines() if line.lstrip().startswith(("0 ", "1 "))]) == 2
    buffer, console = plain()
    print_summary(missing("j2", "no result after --timeout 5 s [store down]"), None, console)
    assert buffer.getvalue().splitlines()[0] == "job j2: failed - no result after --timeout 5 s [store down]"


def test_a_validation_accuracy_of_an_earlier_epoch_says_which():
    """Downpour's epoch ends are evaluated by one worker a round: a record may hold an earlier epoch's accuracy."""
    buffer, console = plain()
    live = LiveProgress(console)
    running = status([3, 3])
    running["workers"][0]["accuracy_epoch"] = 3
    running["workers"][1]["accuracy_epoch"] = 2
    live(running)
    live.close()
    lines = buffer.getvalue().splitlines()
    assert "validation accuracy 0.8300 " in lines[0] + " " and "(epoch" not in lines[0]
    assert "validation accuracy 0.8300 (epoch 2)" in lines[1]


def test_the_summary_says_what_the_job_cost_in_cpu_per_sample():
    buffer, console = plain()
    result = {**missing("j3", "x"), "state": "done", "error": None, "samples": 440_000, "cpu_s": 3.41,
              "store_cpu_s": 0.08, "cpu_s_per_sample": 3.49 / 440_000, "cpu_clock": "process"}
    print_summary(result, None, console)
    assert "cpu              3.41 CPU-s workers + 0.08 store = 7.9 µs a sample (process clocks; store: its own count)" \
        in buffer.getvalue()
    buffer, console = plain()
    print_summary({**result, "store_cpu_s": None, "cpu_s_per_sample": 3.41 / 440_000, "cpu_clock": "mixed"}, None,
                  console)
    assert "cpu              3.41 CPU-s workers = 7.8 µs a sample (process and thread clocks; store: not told)" \
        in buffer.getvalue()
    buffer, console = plain()
    print_summary(missing("j4", "no result"), None, console)  # nothing counted: no line
    assert "CPU-s" not in buffer.getvalue()
