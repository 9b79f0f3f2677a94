"""Every flag of every `faasgd` command says what it does; the config flags' help is the config's descriptions."""

import argparse

import pytest

from faasgd.cli.main import build_parser, main
from faasgd.config import FIELDS, describe_fields


def parsers(parser: argparse.ArgumentParser, path: str):
    """(command path, parser) of `parser` and every subcommand under it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def commands_without_help(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions if (choice.help or "").strip()}
            yield from (f"{path} {name}" for name in action.choices if name not in helped)


def flags_without_help(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue  # a subcommand is checked as a command; a suppressed flag is hidden on purpose
        if not (action.help or "").strip():
            yield "/".join(action.option_strings) or action.dest


def test_every_flag_and_argument_of_every_command_has_help():
    missing = [f"{path}: {flag}" for path, parser in parsers(build_parser(), "faasgd")
               for flag in flags_without_help(parser)]
    assert missing == []


def test_every_command_has_help():
    missing = [name for path, parser in parsers(build_parser(), "faasgd")
               for name in commands_without_help(parser, path)]
    assert missing == []


def test_the_walk_finds_every_command_and_a_flag_without_help():
    found = dict(parsers(build_parser(), "faasgd"))
    assert {"faasgd train", "faasgd status", "faasgd results compare", "faasgd evaluate"} <= set(found)
    broken = argparse.ArgumentParser()
    broken.add_argument("--silent")
    broken.add_argument("--hidden", help=argparse.SUPPRESS)
    assert list(flags_without_help(broken)) == ["--silent"]


def test_train_help_shows_each_config_keys_description_values_and_default(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at spaces and after hyphens
    for key, default, description in describe_fields():
        flag = "--" + key.replace("_", "-")
        assert flag in text and "".join(description.split()) in text, key
        assert f"default{default})" in text, key
    assert "(oneoftanh,relu;defaulttanh)" in text
    assert "(anintegerin[1,65536];default128)" in text
    assert len(describe_fields()) == len(FIELDS)


def test_store_location_flags_say_they_are_for_direct_runs_only(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--store-url STORE_URL", "--local-store-url LOCAL_STORE_URL"):
        assert f"{flag} with --direct only" in text
