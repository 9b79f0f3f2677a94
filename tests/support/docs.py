"""The documentation as tests read it: README.md, the site's pages under docs/, and the mkdocs hook that fills
the generated reference (docs/hooks/reference.py, loaded from its file: docs/ is not a package)."""

from __future__ import annotations

import importlib.util
import pathlib
import re
from types import ModuleType

from support.paths import ROOT

DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "reference.py"


def nav_pages(nav) -> list[str]:
    """The pages of a mkdocs nav, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return [page for item in nav for page in nav_pages(item)]


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faasgd_docs_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prose_files() -> list[pathlib.Path]:
    """README.md and every Markdown page of the site (not the generated example reports' tables)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? \d+|(?<![\w&/#])#\d+\b")
REPOSITORY_PATH = re.compile(r"`((?:src|tests|bench|k8s|scripts|template|docs)/[^`\s]*)`")


def issue_numbers(text: str) -> list[str]:
    """Every mention of a tracker's issue number in a text ("issue 14", "#24")."""
    return [match.group(0) for match in ISSUE_NUMBER.finditer(text)]


def missing_paths(text: str, root: pathlib.Path = ROOT) -> list[str]:
    """Backticked repository paths in a text that name nothing in the repository (a glob must match something;
    a `<placeholder>` segment matches any name)."""
    missing = []
    for match in REPOSITORY_PATH.finditer(text):
        path = match.group(1).split("::")[0].rstrip(".,:;)")
        pattern = re.sub(r"<[^>]*>", "*", path)
        found = any(root.glob(pattern)) if "*" in pattern else (root / pattern).exists()
        if not found:
            missing.append(path)
    return missing
