"""The house stays readable: no source file of the package grows past 350 lines (split it by what it does)."""

from __future__ import annotations

from support.paths import ROOT

MAX_LINES = 350


def test_no_source_file_is_over_350_lines():
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
             for path in (ROOT / "src" / "faasgd").rglob("*.py")}
    assert len(sizes) > 100  # the whole package was read
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}
