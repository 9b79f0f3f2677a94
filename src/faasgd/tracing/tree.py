"""The tree of one job's spans, read from the JSON lines the `faasgd-file` exporter leaves in a directory.

A job's traces are those holding a span with `faasgd.job_id` = the job (setup, train, stacking.*); every
span of those traces is shown, children under their parent, in start order. A span whose parent is not in
the files (the CLI's own, not exported) is a root. Standard library only: the CLI needs no SDK to read.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass, field

JOB_ATTRIBUTE = "faasgd.job_id"
SHOWN = ("worker_id", "iteration", "function", "trainer_id", "workers")  # attributes printed beside a span's name


@dataclass
class Node:
    span: dict
    children: list["Node"] = field(default_factory=list)


def read_spans(directory: str | pathlib.Path) -> list[dict]:
    """Every span line of every *.jsonl file in `directory` (a line cut short by a writer still running is skipped)."""
    spans = []
    for path in sorted(pathlib.Path(directory).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                spans.append(json.loads(line))
            except ValueError:
                continue
    return spans


def job_trees(spans: list[dict], job_id: str) -> list[Node]:
    """The roots of the job's traces, each with its descendants, ordered by start."""
    traces = {s["trace_id"] for s in spans if (s.get("attributes") or {}).get(JOB_ATTRIBUTE) == job_id}
    mine = sorted((s for s in spans if s["trace_id"] in traces), key=lambda s: s["start_ns"])
    nodes = {s["span_id"]: Node(s) for s in mine}
    roots = []
    for node in nodes.values():
        parent = nodes.get(node.span.get("parent_id") or "")
        (parent.children if parent is not None else roots).append(node)
    return roots


def render(roots: list[Node]) -> list[str]:
    """The trees as indented lines: name, service, duration, the attributes worth seeing."""
    lines: list[str] = []

    def walk(node: Node, depth: int) -> None:
        s = node.span
        attrs = s.get("attributes") or {}
        shown = " ".join(f"{k}={attrs['faasgd.' + k]}" for k in SHOWN if "faasgd." + k in attrs)
        ms = (s["end_ns"] - s["start_ns"]) / 1e6
        error = "  ERROR" if s.get("status") == "ERROR" else ""
        lines.append(f"{'  ' * depth}{s['name']}  [{s.get('service')}] {ms:.1f} ms{'  ' + shown if shown else ''}{error}")
        for child in node.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return lines
