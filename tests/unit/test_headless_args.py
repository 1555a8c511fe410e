"""The main command's flags read without Typer (kimi_cli/cli/headless_args.py) against Typer's own reading of the
declarations in kimi_cli/cli/main.py: the same options, and, for every command line the fast reader takes, the
same values; what it does not take it leaves to Typer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_cli.cli.headless_args import OPTIONS, parse
from kimi_cli.cli.start import PICK, expand_argv

pytestmark = pytest.mark.unit


def _command() -> Any:
    import typer.main

    from kimi_cli.cli.main import app

    return typer.main.get_command(app)


def _kind(param: Any) -> str:
    annotation = param.type_descriptor.annotation
    if param.is_flag:
        return "flag"
    simple = {str: "str", int: "int", float: "float", Path: "path"}
    if param.multiple:
        return {"str": "strs", "path": "paths"}[simple[annotation.__args__[0]]]
    return simple[annotation]


def test_the_table_names_every_option_of_the_main_command_as_typer_declares_it() -> None:
    declared = {
        p.name: (sorted([*p.opts, *p.secondary_opts]), _kind(p))
        for p in _command().params
        if p.name != "version"  # eager: it prints the version, which Typer (or kimi_cli.entry) does
    }
    table = {name: (sorted(flags), kind) for flags, name, kind in OPTIONS}
    assert table == declared


def _typer_values(argv: list[str]) -> dict[str, Any]:
    ctx = _command().make_context("kimi", list(argv))
    values = dict(ctx.params)
    values.pop("version")
    # what start() is called with: an option never given is its default; a repeatable one never given, ()
    unset = {
        k for k, v in values.items() if v is None or v is False or v == () or (k == "output_format" and v == "text")
    }
    return {k: v for k, v in values.items() if k not in unset}


CORPUS = [
    [],
    ["-p", "fix the test"],
    ["--prompt", "fix", "--output-format", "json"],
    ["--prompt=fix", "--output-format=stream-json", "--yolo"],
    ["-p", "--yolo"],  # a value may start with a dash, as Typer reads it
    ["-p", "-"],
    ["-p", ""],
    ["-p", "a", "-p", "b"],  # the last one
    ["-p", "x", "--image", "a.png", "--image", "b.png", "--mcp-config", "m.json", "--mcp-config=n.json"],
    ["-p", "x", "--max-steps", "3", "--max-tokens", "-1", "--context-length", "+4096", "--pack-budget", "0"],
    ["-p", "x", "--visual-check", "index.html", "--visual-target", "0.95", "--visual-size", "800x600"],
    ["-p", "x", "--compact-at", ".5"],
    ["-p", "x", "--compact-at", "1e-1"],
    ["-p", "x", "-c", "-w", "/tmp", "-v"],
    ["-p", "x", "--resume", "abc", "--fork", "def", "--branch", "b", "--worktree", "w"],
    ["-p", "x", "--attempts", "2", "--check", "pytest -q", "--patch", "out.diff"],
    ["-p", "x", "--no-pack", "--no-thinking", "--plan", "--trust", "--allow-network", "--sandbox", "none"],
    ["-p", "x", "--model", "m", "--provider", "openai", "--base-url", "http://127.0.0.1:1/v1", "--effort", "low"],
    ["-p", "x", "--output-schema", "schema.json"],
    ["--continue"],
]


@pytest.mark.parametrize("argv", CORPUS, ids=[" ".join(a) or "(none)" for a in CORPUS])
def test_the_fast_reader_reads_a_plain_command_line_as_typer_does(argv: list[str]) -> None:
    fast = parse(argv)
    assert fast is not None
    assert fast == _typer_values(argv)


LEFT_TO_TYPER = [
    ["--help"],
    ["-p", "x", "-h"],
    ["--version"],
    ["-p", "x", "--version"],
    ["pack"],
    ["-p", "x", "ci-repair", "--test", "t"],
    ["-p", "x", "--", "y"],
    ["-p", "x", "--max-steps", "many"],  # Typer says what is wrong with it
    ["-p", "x", "--max-steps", "1_0"],  # Typer's reading of a number decides the unusual spellings
    ["-p", "x", "--visual-target", "inf"],
    ["-p", "x", "--max-steps"],  # a missing value
    ["-p", "x", "--yolo=1"],
    ["-p", "x", "--nope"],
    ["-p", "x", "--prom", "y"],
    ["-cv", "-p", "x"],  # grouped short flags
    ["-px"],  # a glued value
    ["-p", "x", "-w", ""],
    ["-"],
]


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=[" ".join(a) for a in LEFT_TO_TYPER])
def test_anything_but_a_plain_command_line_is_left_to_typer(argv: list[str]) -> None:
    assert parse(argv) is None


def test_a_resume_or_worktree_without_a_value_is_filled_before_either_reader() -> None:
    argv = expand_argv(["-p", "x", "-r", "--worktree"])
    assert parse(argv) == {"prompt": "x", "resume": PICK, "worktree": "@auto"}
    assert _typer_values(argv) == parse(argv)


def test_the_picker_spells_the_pick_marker_as_the_command_line_does() -> None:
    from kimi_cli.frontends.terminal.picker import PICK as PICKER_PICK

    assert PICKER_PICK == PICK
