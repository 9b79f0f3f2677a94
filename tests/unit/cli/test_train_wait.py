"""`faasgd train` through the runtime ends as its job ends: each status read waits up to STATUS_POLL_S for the end
(emnist-setup's `wait`), so the end is seen by the read it happens in, not at the next one."""

from __future__ import annotations

import time
from types import SimpleNamespace

from faasgd.api.jobs import Job
from faasgd.cli import train
from faasgd.cli.main import main
from faasgd.job import result


def test_the_command_ends_with_the_read_its_job_ended_in(monkeypatch, tmp_path):
    asked, began = [], time.monotonic()
    ends_at = began + 0.2  # the job ends 0.2 s in: during the first read

    def read_status_waiting(seconds):  # as emnist-setup answers `wait`: at the end, or after the seconds
        asked.append(seconds)
        time.sleep(max(0.0, min(ends_at, time.monotonic() + seconds) - time.monotonic()))
        if time.monotonic() < ends_at:
            return {"state": "running"}
        return {"state": "failed", "result": result.missing("j0123456789abcdef", "ended here")}

    def read_status():
        raise AssertionError("the command reads the status with a wait")

    info = {"number_of_workers": 2, "dataset": "synthetic", "invocation_mode": "loop", "store": "redis",
            "store_url": "redis://redis:6379/0"}
    job = Job("j0123456789abcdef", read_status, lambda: b"", lambda verb: AssertionError(verb), info,
              read_status_waiting=read_status_waiting)
    monkeypatch.setattr(train.api, "start_runtime", lambda *a, **k: SimpleNamespace(
        gateway_url="http://127.0.0.1:1", started=False))
    monkeypatch.setattr(train, "gateway", lambda args: SimpleNamespace(url=args.gateway))
    monkeypatch.setattr(train.api, "submit", lambda client, body, directory=None: job)
    assert main(["train", "--dataset", "synthetic", "--dir", str(tmp_path)]) == 1  # the job's failed record
    assert len(asked) == 1 and abs(asked[0] - train.STATUS_POLL_S) < 0.01  # one read, which saw the end
    assert time.monotonic() - ends_at < train.STATUS_POLL_S  # not a period after the end (polling's worst case)
