"""The documentation as tests read it: README.md, the site's pages under docs/, and the mkdocs hook that fills
the generated reference (docs/hooks/reference.py, loaded from its file: docs/ is not a package)."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "reference.py"


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faasgd_docs_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prose_files() -> list[pathlib.Path]:
    """README.md and every Markdown page of the site (not the generated example reports' tables)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
