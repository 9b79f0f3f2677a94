"""`faasgd status JOB --trace [--trace-dir DIR]`: the tree of one job's spans, from the `faasgd-file` exporter's
files (faasgd.tracing.tree). DIR defaults to FAASGD_TRACES_DIR, the variable the replicas wrote with."""

from __future__ import annotations

import os
import pathlib

from faasgd.cli.output import emit_json
from faasgd.cli.progress import console
from faasgd.errors import ConfigError
from faasgd.store.keys import check_job_id
from faasgd.tracing import tree


def run(args) -> int:
    check_job_id(args.job_id)
    directory = args.trace_dir or os.environ.get("FAASGD_TRACES_DIR")
    if not directory or not pathlib.Path(directory).is_dir():
        raise ConfigError("--trace-dir", "a directory of span files is needed (the FAASGD_TRACES_DIR the runtime ran "
                                         f"with, OTEL_TRACES_EXPORTER=faasgd-file), got {directory!r}")
    spans = tree.read_spans(directory)
    roots = tree.job_trees(spans, args.job_id)
    if args.json:
        emit_json([node_json(r) for r in roots])
        return 0
    out = console()
    if not roots:
        out.print(f"job {args.job_id}: no spans in {directory}", highlight=False, markup=False)
        return 1
    for line in tree.render(roots):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    return 0


def node_json(node: tree.Node) -> dict:
    return {**node.span, "children": [node_json(c) for c in node.children]}
