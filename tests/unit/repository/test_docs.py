"""The documentation: README stays a door, no prose names an issue number or a file that is gone, the site's nav
holds every page, and the mkdocs hook fills the generated reference from the code."""

from __future__ import annotations

import logging
import re

import pytest
import yaml

from faasgd import config
from faasgd.cli.main import build_parser
from support.docs import (DOCS, ROOT, code_texts, dead_docs_pointers, issue_numbers, load_hook, missing_paths,
                          nav_pages, prose_files)

PROSE = prose_files()


def test_the_readme_is_at_most_300_lines():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


@pytest.mark.parametrize("path", PROSE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_prose_names_an_issue_number(path):
    assert issue_numbers(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", PROSE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_backticked_repository_path_exists(path):
    assert missing_paths(path.read_text(encoding="utf-8")) == []


def test_the_readmes_links_reach_files():
    """README.md is outside the site (mkdocs checks the pages' links); its own links must reach files too."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local and [link for link in local if not (ROOT / link).is_file()] == []


def test_the_checks_find_what_they_look_for():
    assert issue_numbers("as issue 14 said, and Issues 3; fixed in #24") == ["issue 14", "Issues 3", "#24"]
    assert issue_numbers("an anchor [x](#update-rules), an entity &#39; and a colour #fff") == []
    text = "`src/faasgd/config/base.py`, `tests/unit/lambdaml/test_convex_*.py`, `profile/record.py` and `src/faasgd/gone.py`."
    assert missing_paths(text) == ["src/faasgd/gone.py"]
    assert missing_paths("`tests/stack_rules.py`, `bench/results/run-<n>.png`") == ["tests/stack_rules.py",
                                                                                      "bench/results/run-<n>.png"]


def test_the_nav_holds_every_page_and_only_pages_that_exist():
    """A page with a notebook of its name beside it (generated from it: scripts/tutorial_notebook.py) is shown as that
    notebook, the page kept out of the site as its source."""
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = nav_pages(site["nav"])
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    shown = {p[:-3] + ".ipynb" if (DOCS / p).with_suffix(".ipynb").is_file() else p for p in pages}
    assert sorted(set(nav)) == sorted(shown)
    assert len(nav) == len(set(nav))
    assert {f"/{p}" for p in pages - shown} <= set(site["exclude_docs"].split())


@pytest.fixture(scope="module")
def hook():
    return load_hook()


def test_the_hook_replaces_placeholder_lines_and_leaves_the_rest(hook):
    page = "# Columns\n\ntext `<!-- faasgd:runs-csv -->` inline stays\n<!-- faasgd:runs-csv -->\nafter\n"
    filled = hook.fill(page)
    assert filled.startswith("# Columns\n\ntext `<!-- faasgd:runs-csv -->` inline stays\n| column | unit |")
    assert filled.endswith("\nafter\n") and filled.count("<!-- faasgd:") == 1


def test_the_configuration_table_has_every_key_with_its_default(hook):
    table = hook.fill("<!-- faasgd:config -->")
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines()[2:]}
    assert list(rows) == list(config.FIELDS)
    described = {key: text for key, _, text in config.describe_fields()}
    assert f"| `batch_size` | `128` | {described['batch_size']} |" in table
    assert "| `hidden_sizes` | `100` |" in table and '| `sync` | `""` |' in table


def test_descriptions_come_from_describe_fields(hook, monkeypatch):
    described = [(name, "", f"what {name} does") for name in config.FIELDS]
    monkeypatch.setattr(config, "describe_fields", lambda: described)
    table = hook.fill("<!-- faasgd:config -->")
    assert "| `n_push` | `10` | what n_push does |" in table


def test_a_key_without_a_description_is_a_warning(hook, monkeypatch, caplog):
    monkeypatch.setattr(hook, "config_descriptions", lambda: {"seed": "the seed"})
    with caplog.at_level(logging.WARNING, logger="mkdocs.hooks.faasgd"):
        hook.fill("<!-- faasgd:config -->")
    warned = {record.args[0] for record in caplog.records}
    assert "batch_size" in warned and "seed" not in warned


def test_the_cli_reference_has_every_command_and_flag(hook):
    text = hook.fill("<!-- faasgd:cli -->")

    def walk(parser, prog):
        assert f"`{prog}`" in text, prog
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in text, (prog, flag)
            for name, sub in getattr(action, "choices", None).items() if hasattr(action, "_name_parser_map") else ():
                walk(sub, f"{prog} {name}")

    walk(build_parser(), "faasgd")
    assert "### `faasgd train`" in text and "#### `faasgd results compare`" in text


CODE_TEXTS = code_texts()


@pytest.mark.parametrize("path", CODE_TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_stack_and_template_point_to_the_docs_site_not_to_readme_sections(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    if not path.is_relative_to(ROOT / "bench"):  # a bench may run the README's own commands (its Deploy section)
        assert "README" not in text
    assert dead_docs_pointers(text) == []


def test_the_pointer_check_finds_a_gone_page_and_a_gone_section():
    text = ('see docs/how-to/traces.md, docs/how-to/gone.md and docs/explanation/downpour.md "Update rules", '
            'docs/explanation/downpour.md, \\"No such section\\"')
    assert dead_docs_pointers(text) == ["docs/how-to/gone.md", 'docs/explanation/downpour.md "No such section"']


EXTERNAL_NAMES = {"TCP_NODELAY", "b_out", "b_in", "load_svmlight_file", "FAAS_CLI", "anyio_backend",
                  "ADDITIONAL_PACKAGE"}  # names of other projects' APIs, build arguments and formulas' symbols


def test_every_code_name_the_docs_cite_exists():
    """A backticked snake_case name in the docs (`resolve_store`, `keep_crossing()`) is found in the project's code,
    tests, benches, stack or template, or is a known outside name."""
    corpus = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in
                       [*CODE_TEXTS, *ROOT.joinpath("tests").rglob("*.py"), ROOT / "Makefile", ROOT / "test.sh",
                        *ROOT.joinpath("scripts").rglob("*")] if p.is_file())
    cited = {name for page in prose_files() for name in
             re.findall(r"`([A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]*)(?:\(\))?`", page.read_text(encoding="utf-8"))}
    assert sorted(name for name in cited - EXTERNAL_NAMES if name not in corpus) == []
