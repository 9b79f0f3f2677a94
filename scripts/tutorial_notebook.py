"""docs/tutorials/python-api.ipynb from docs/tutorials/python-api.md: the tutorial as a notebook, generated, so the
two never say different things (tests/unit/repository/test_tutorial_notebook.py checks the committed notebook is this
script's output; tests/e2e/test_tutorial_notebook_e2e.py runs it against a real runtime).

    .venv/bin/python scripts/tutorial_notebook.py           # rewrite the notebook after editing the page
    .venv/bin/python scripts/tutorial_notebook.py --check   # exit 1 when the notebook is not the page's

The page's prose becomes markdown cells and each ```python block a code cell, in order. A block the page marks with
`<!-- notebook: not run -->` on the line before it (one that needs something the notebook does not make, such as a
./test.sh batch) stays a code block inside a markdown cell, shown and not run; shell blocks stay markdown too. The
notebook is written without outputs: running it (`jupyter lab`, nbclient) fills them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "tutorials" / "python-api.md"
NOTEBOOK = PAGE.with_suffix(".ipynb")
NOT_RUN = "<!-- notebook: not run -->"


def cells_of(text: str) -> list[tuple[str, str]]:
    """[(kind, source)] of the page: "markdown" or "code", in order."""
    cells: list[tuple[str, str]] = []
    prose: list[str] = []
    lines, i = text.splitlines(), 0

    def flush() -> None:
        source = "\n".join(prose).strip("\n")
        if source.strip():
            cells.append(("markdown", source))
        prose.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```python"):
            end = lines.index("```", i + 1)
            block = lines[i + 1:end]
            if prose and prose[-1].strip() == NOT_RUN:
                prose[-1] = "*(shown, not run here:)*"
                prose.extend([line, *block, "```"])
            else:
                flush()
                cells.append(("code", "\n".join(block)))
            i = end + 1
            continue
        if line.startswith("```"):  # another language: kept whole in the prose
            end = lines.index("```", i + 1)
            prose.extend(lines[i:end + 1])
            i = end + 1
            continue
        prose.append(line)
        i += 1
    flush()
    return cells


def notebook(text: str) -> dict:
    """The notebook (nbformat 4.5) of the page's text."""
    cells = cells_of(text)
    out = []
    for n, (kind, source) in enumerate(cells, 1):
        cell = {"cell_type": kind, "id": f"cell-{n}", "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                      "name": "python3"},
                                       "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def rendered(text: str) -> str:
    return json.dumps(notebook(text), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the notebook is not the page's")
    args = parser.parse_args(argv)
    wanted = rendered(PAGE.read_text(encoding="utf-8"))
    if args.check:
        same = NOTEBOOK.is_file() and NOTEBOOK.read_text(encoding="utf-8") == wanted
        if not same:
            print(f"{NOTEBOOK.relative_to(ROOT)} is not {PAGE.relative_to(ROOT)}'s: run scripts/tutorial_notebook.py",
                  file=sys.stderr)
        return 0 if same else 1
    NOTEBOOK.write_text(wanted, encoding="utf-8")
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
