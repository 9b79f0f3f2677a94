"""A batch run on emulated nodes records what each node's link carried during its job (the target's counters before
and after), and runs.csv holds it as a JSON cell; a target without nodes leaves the cell empty."""

from __future__ import annotations

import csv
import json

import httpx

from faasgd.batch.matrix import parse_matrix_text
from faasgd.batch.report import write_runs_csv
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import Target
from faasgd.openfaas import GatewayClient

MATRIX = """
name: links
rounds: 1
fixed: {dataset: synthetic, max_epochs: 1}
matrix:
  number_of_workers: [1, 2]
"""


class NodesTarget(Target):
    """A gateway answering each job done at once, and link counters that grow by 1000 x workers to node-1 and
    10 from node-2 during each job (read once before the job and once after)."""

    name = "fake"

    def __init__(self, nodes: bool = True):
        self.nodes, self.reads, self.workers = nodes, 0, 0
        self.counts = {"node-1": {"to_node": 5, "from_node": 7}, "node-2": {"to_node": 0, "from_node": 0}}
        self.gateway = GatewayClient("http://gateway.test", transport=httpx.MockTransport(self.answer))

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.workers = int(json.loads(request.content)["number_of_workers"])
            return httpx.Response(200, json={"job_id": "j", "status_query": {"job_id": "j"}})
        return httpx.Response(200, json={"state": "done", "result": {"state": "done"}, "created_at": 0.0,
                                         "workers": [None] * self.workers})

    def link_bytes(self) -> dict | None:
        if not self.nodes:
            return None
        self.reads += 1
        if self.reads % 2 == 0:  # after a job
            self.counts["node-1"]["to_node"] += 1000 * self.workers
            self.counts["node-2"]["from_node"] += 10
        return json.loads(json.dumps(self.counts))


def test_each_run_records_its_jobs_link_bytes_and_runs_csv_holds_them(tmp_path):
    matrix = parse_matrix_text(MATRIX, "m")
    runs = run_batch(matrix, NodesTarget(), 1, 5.0, lambda line: None)
    assert [run["link_bytes"] for run in runs] == [
        {"node-1": {"to_node": 1000 * w, "from_node": 0}, "node-2": {"to_node": 0, "from_node": 10}} for w in (1, 2)]
    write_runs_csv(runs, tmp_path / "runs.csv")
    with open(tmp_path / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [json.loads(row["link_bytes"]) for row in rows] == [run["link_bytes"] for run in runs]


def test_without_nodes_the_cell_is_empty(tmp_path):
    runs = run_batch(parse_matrix_text(MATRIX, "m"), NodesTarget(nodes=False), 1, 5.0, lambda line: None)
    assert [run["link_bytes"] for run in runs] == [None, None]
    write_runs_csv(runs, tmp_path / "runs.csv")
    with open(tmp_path / "runs.csv", newline="") as f:
        assert [row["link_bytes"] for row in csv.DictReader(f)] == ["", ""]
