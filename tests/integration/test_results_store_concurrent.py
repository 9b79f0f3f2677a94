"""The results database survives two batches writing at once (two processes), read meanwhile by a third."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from faasgd.api import results_store

pytestmark = pytest.mark.integration

RUNS = 100
WRITER = """
import sys, time
from faasgd.batch.record import BatchRecord
from faasgd.batch.redact import Redactor
name, path, count, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
time.sleep(max(0.0, start_at - time.time()))  # both start together, their imports done
record = BatchRecord(path, {"name": name, "target": "local"}, Redactor(), lambda line, error=False: print(line))
for index in range(1, count + 1):
    time.sleep(0.005)  # a run takes a while: the other batch writes in between
    record.run(index, {"configuration": f"{name}-{index}", "round": 1, "state": "done", "config": {"seed": index},
                       "varying": {}, "samples_per_s": float(index)})
record.finish({"name": name})
"""


def test_two_batches_writing_at_once_both_keep_every_run(tmp_path):
    path = tmp_path / "results" / "faasgd.sqlite"
    start_at = str(time.time() + 1.5)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, name, str(path), str(RUNS), start_at],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    seen = []
    deadline = time.monotonic() + 60
    while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
        if path.exists():  # a reader during the writes: never an error, never half a run
            try:
                db = results_store.open_db(path, create=False)
                seen.append(len(results_store.runs(db)))
                db.close()
            except FileNotFoundError:
                pass
        time.sleep(0.02)
    outputs = [w.communicate(timeout=60) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert all(out == "" for out, _ in outputs), outputs  # no "not written" line
    db = results_store.open_db(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    batches = results_store.batches(db)
    assert sorted(b["name"] for b in batches) == ["a", "b"] and all(b["runs"] == RUNS for b in batches)
    assert all(b["finished_at"] for b in batches)
    for batch in batches:
        found = results_store.runs(db, [batch["batch_id"]])
        assert [r["samples_per_s"] for r in found] == [float(i) for i in range(1, RUNS + 1)]
        assert {r["configuration"].split("-")[0] for r in found} == {batch["name"]}
    assert seen == sorted(seen)  # runs only ever appear
    order = [row[0] for row in db.execute("SELECT batch_id FROM runs ORDER BY rowid")]
    assert sum(x != y for x, y in zip(order, order[1:])) > 2  # the two batches' writes did interleave
    assert results_store.applied(db) == [m[0] for m in results_store.MIGRATIONS]  # each migration once
