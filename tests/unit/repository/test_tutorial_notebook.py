"""The tutorial's notebook is its page's: docs/tutorials/python-api.ipynb is exactly what scripts/tutorial_notebook.py
makes of docs/tutorials/python-api.md (edit the page, then run the script), and the script keeps every code block,
runs only the Python ones not marked, and keeps the prose between them."""

import importlib.util
import json

from support.paths import ROOT


def script():
    spec = importlib.util.spec_from_file_location("tutorial_notebook", ROOT / "scripts" / "tutorial_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_notebook_is_the_pages():
    made = script()
    assert made.NOTEBOOK.read_text(encoding="utf-8") == made.rendered(made.PAGE.read_text(encoding="utf-8")), \
        "docs/tutorials/python-api.ipynb differs from its page: run scripts/tutorial_notebook.py"
    assert made.main(["--check"]) == 0


def test_python_blocks_run_marked_and_shell_blocks_are_shown():
    page = ("# Title\n\nSome prose.\n\n```sh\npip install x\n```\n\n```python\na = 1\n```\n\nMore.\n\n"
            "<!-- notebook: not run -->\n```python\nneeds_a_batch()\n```\n\n```python\nprint(a)\n```\n")
    cells = script().cells_of(page)
    assert [kind for kind, _ in cells] == ["markdown", "code", "markdown", "code"]
    assert "```sh\npip install x\n```" in cells[0][1] and cells[1][1] == "a = 1"
    assert "needs_a_batch()" in cells[2][1] and "notebook: not run" not in cells[2][1] and cells[3][1] == "print(a)"
    notebook = json.loads(script().rendered(page))
    assert notebook["nbformat"] == 4 and all(c.get("outputs", []) == [] for c in notebook["cells"])
