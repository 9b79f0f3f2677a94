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


DOCS_POINTER = re.compile(r"docs/(?:tutorials|how-to|explanation|reference)/[\w.-]+\.md")
SECTION_AFTER = re.compile(r"[,:]?\s*\\?\"([^\"\\]+)\\?\"")  # `docs/x.md "A section"` or `docs/x.md, \"A section\"`


def code_texts() -> list[pathlib.Path]:
    """What points readers at the docs besides the docs: the code (docstrings, comments, help text and messages),
    the benches, stack.yml, the template and the k8s manifests."""
    paths = [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("bench").glob("*.py"), ROOT / "stack.yml",
             *ROOT.joinpath("k8s").rglob("*.yaml"), *ROOT.joinpath("k8s").rglob("*.json")]
    paths += [p for p in ROOT.joinpath("template").rglob("*") if p.is_file() and p.suffix not in (".pyc",)]
    return sorted(set(paths))


def headings(page: pathlib.Path) -> list[str]:
    """A page's headings, and the bold leads that open its paragraphs (`**What a push costs**, ...`)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    return [line.lstrip("#").strip() for line in lines if line.startswith("#")] + \
        [line[2:] for line in lines if line.startswith("**")]


def dead_docs_pointers(text: str, root: pathlib.Path = ROOT) -> list[str]:
    """Pointers to the docs site's pages in a text whose page is gone, or whose quoted section right after the page
    ("A section": a heading or a paragraph's bold lead on that page begins with it) is not on the page."""
    dead = []
    for match in DOCS_POINTER.finditer(text):
        page = root / match.group(0)
        if not page.is_file():
            dead.append(match.group(0))
            continue
        section = SECTION_AFTER.match(text, match.end())
        if section and not any(h.startswith(section.group(1)) for h in headings(page)):
            dead.append(f'{match.group(0)} "{section.group(1)}"')
    return dead
