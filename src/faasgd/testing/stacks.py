"""A project's stack.yml, copied for a test's runtime with its handlers as absolute paths.

Replicas drain for `drain_s` after SIGTERM (healthcheck_interval: 5 s in stack.yml, which would make every
`faasgd down` of a test take that long); `edit(stack)` changes anything else before it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import yaml


def stack_copy(project: Path, directory: Path, drain_s: int = 1, edit: Callable[[dict], None] | None = None) -> str:
    """`project`'s stack.yml written into `directory` (handlers resolved against `project`); returns its path."""
    stack = yaml.safe_load((project / "stack.yml").read_text())
    for spec in stack["functions"].values():
        spec["handler"] = str((project / spec["handler"]).resolve())
        spec["environment"] = {**spec["environment"], "healthcheck_interval": f"{drain_s}s"}
    if edit is not None:
        edit(stack)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "stack.yml"
    path.write_text(yaml.safe_dump(stack))
    return str(path)
