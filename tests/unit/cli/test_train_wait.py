"""`faasgd train` through the runtime ends soon after its job: the status is read every STATUS_POLL_S."""

from __future__ import annotations

import time
from types import SimpleNamespace

from faasgd.api.jobs import Job
from faasgd.cli import train
from faasgd.cli.main import main
from faasgd.job import result


def test_the_command_ends_within_a_status_period_of_its_job(monkeypatch, tmp_path):
    reads = []

    def read_status():  # the job ends 50 ms after the first read
        reads.append(time.monotonic())
        if reads[-1] - reads[0] < 0.05:
            return {"state": "running"}
        return {"state": "failed", "result": result.missing("j0123456789abcdef", "ended here")}

    info = {"number_of_workers": 2, "dataset": "synthetic", "invocation_mode": "loop", "store": "redis",
            "store_url": "redis://redis:6379/0"}
    job = Job("j0123456789abcdef", read_status, lambda: b"", lambda verb: AssertionError(verb), info)
    monkeypatch.setattr(train.api, "start_runtime", lambda *a, **k: SimpleNamespace(
        gateway_url="http://127.0.0.1:1", started=False))
    monkeypatch.setattr(train, "gateway", lambda args: SimpleNamespace(url=args.gateway))
    monkeypatch.setattr(train.api, "submit", lambda client, body: job)
    began = time.monotonic()
    assert main(["train", "--dataset", "synthetic", "--dir", str(tmp_path)]) == 1  # the job's failed record
    # the end is seen at the second read, one period later, not openfaas.POLL_S (0.5 s) later
    assert len(reads) == 2 and reads[1] - reads[0] <= train.STATUS_POLL_S + 0.05
    assert time.monotonic() - began < 0.45
