"""`faasgd train --dry-run` admits the job as emnist-setup would (functions/admission.py), against the stack file's
environment of emnist-setup: a job its workers could not hold is refused (exit 2, one line naming the field)."""

import json

from support.paths import ROOT

from faasgd.cli.main import main

STACK = str(ROOT / "stack.yml")
SMALL = ["--dataset", "synthetic", "--train-samples", "2000", "--test-samples", "200"]


def test_a_network_past_the_functions_memory_limit_is_refused(capsys):
    assert main(["train", "--dry-run", "-f", STACK, *SMALL, "--hidden-sizes", "65536,65536,65536"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("faasgd: error: hidden_sizes: ") and "memory_limit=1Gi" in err[0]


def test_a_job_that_fits_prints_its_config(capsys):
    assert main(["train", "--dry-run", "-f", STACK, *SMALL, "--hidden-sizes", "64"]) == 0
    assert json.loads(capsys.readouterr().out)["hidden_sizes"] == [64]


def test_more_loop_workers_than_the_stack_runs_at_once_are_refused(capsys):
    assert main(["train", "--dry-run", "-f", STACK, *SMALL, "--workers", "64", "--invocation-mode", "loop"]) == 2
    assert "number_of_workers: " in capsys.readouterr().err
