"""mkdocs hook: fills the reference pages' placeholders from the code, so the docs cannot drift from it.

A page holds a placeholder comment on a line of its own; `on_page_markdown` replaces it with:
- `<!-- faasgd:runs-csv -->`: runs.csv's columns, `faasgd.batch.schema.render_markdown()`;
- `<!-- faasgd:cli -->`: every `faasgd` command and flag, walked from `faasgd.cli.main.build_parser()`;
- `<!-- faasgd:config -->`: every configuration key of `faasgd.config.FIELDS` with its default and description.

Descriptions come from the typed config's fields (`faasgd.config.describe_fields()`: key, default, description).
A key without a description is a warning, which `mkdocs build --strict` fails on.
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import pathlib

log = logging.getLogger("mkdocs.hooks.faasgd")
HERE = pathlib.Path(__file__).resolve().parent


def cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def render_runs_csv() -> str:
    from faasgd.batch import schema

    return schema.render_markdown()


def config_descriptions() -> dict[str, str]:
    """Each config key's one-line description, from the typed config (faasgd.config.describe_fields)."""
    from faasgd import config

    return {key: description for key, _default, description in config.describe_fields()}


def default_of(field) -> object:
    """A field's default, for a dataclass field or a pydantic FieldInfo alike."""
    factory = getattr(field, "default_factory", None)
    if factory not in (None, dataclasses.MISSING):
        return factory()
    return getattr(field, "default", None)


def show_default(value: object) -> str:
    if isinstance(value, (tuple, list)):
        value = ",".join(str(item) for item in value)
    return f"`{value}`" if value != "" else '`""`'


def render_config() -> str:
    from faasgd.config import FIELDS

    descriptions = config_descriptions()
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for name, field in FIELDS.items():
        if not descriptions.get(name):
            log.warning("configuration key %r has no description", name)
        rows.append(f"| `{name}` | {cell(show_default(default_of(field)))} | {cell(descriptions.get(name, ''))} |")
    return "\n".join(rows)


def flag_names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    return ", ".join(f"`{name}`" for name in action.option_strings)


def flag_default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if not action.option_strings:
        return f"`{action.default}`" if action.default not in (None, []) else "optional"
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction,
                           argparse._VersionAction)) or action.default in (None, argparse.SUPPRESS, []):
        return ""
    return f"`{action.default}`"


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each sub-command, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return found


def render_parser(prog: str, summary: str, parser: argparse.ArgumentParser, level: int, sub_level: int) -> list[str]:
    lines = [f"{'#' * level} `{prog}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:].rstrip(".") + ".", ""]
    actions = [a for a in parser._actions if not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))]
    if actions:
        lines += ["| argument | default | what |", "|---|---|---|"]
        lines += [f"| {flag_names(a)} | {cell(flag_default(a))} | {cell(a.help or '')} |" for a in actions]
        lines.append("")
    for name, help_text, sub in subcommands(parser):
        lines += render_parser(f"{prog} {name}", help_text, sub, sub_level, min(sub_level + 1, 6))
    return lines


def render_cli() -> str:
    from faasgd.cli.main import build_parser

    parser = build_parser()
    return "\n".join(render_parser("faasgd", parser.description or "", parser, 3, 3)).rstrip()


RENDERERS = {
    "<!-- faasgd:runs-csv -->": render_runs_csv,
    "<!-- faasgd:cli -->": render_cli,
    "<!-- faasgd:config -->": render_config,
}


def fill(markdown: str) -> str:
    """The page with each placeholder line replaced by what its renderer makes from the code."""
    lines = markdown.split("\n")
    return "\n".join(RENDERERS[line.strip()]() if line.strip() in RENDERERS else line for line in lines)


def on_page_markdown(markdown: str, page=None, config=None, files=None) -> str:  # the mkdocs hook event
    return fill(markdown)
