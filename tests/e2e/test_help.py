"""One help style for every command (Typer's, rendered by rich), summaries never cut, undo described one way,
the fast paths (`kimi pack`, `kimi undo`) parsing exactly the options their help shows, and pack --task
listed by rank."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import run_kimi

COMMANDS = [[], ["pack"], ["undo"], ["prompt"], ["login"], ["sessions"], ["trust"], ["ci-repair"], ["acp"],
            ["engine"], ["engine", "plan"], ["mcp"], ["mcp", "add"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) or "kimi" for c in COMMANDS])
def test_every_command_has_the_same_help_style(repo: Path, env: dict, command: list[str]) -> None:
    proc = run_kimi([*command, "--help"], repo, env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(rf"Usage: kimi {' '.join(command)}".rstrip() + r" \[OPTIONS\]", out), out
    assert "╭─ Options" in out  # rich panels, not argparse's `options:` or click's plain `Options:`
    assert "usage: kimi" not in out and "\noptions:\n" not in out and "<bool>" not in out


def test_summaries_are_never_cut_even_at_200_columns(repo: Path, env: dict) -> None:
    out = run_kimi(["--help"], repo, {**env, "COLUMNS": "200"}).stdout
    for summary in (
        "Put files back as they were before your last prompt, and cut the conversation there (or go back to before "
        "undo point N; --list shows the points).",
        "Set up kimi: choose a provider and key (or a server's base URL), check them against the server's /v1/models,",
    ):
        assert summary in " ".join(out.replace("│", " ").split())
    commands = out[out.index("╭─ Commands") :]
    assert "..." not in commands and "…" not in commands  # click cut summaries at 45 characters with "..."


def test_undo_is_described_one_way(repo: Path, env: dict) -> None:
    top = " ".join(run_kimi(["--help"], repo, env).stdout.replace("│", " ").split())
    own = " ".join(run_kimi(["undo", "--help"], repo, env).stdout.replace("│", " ").split())
    sentence = "Put files back as they were before your last prompt, and cut the conversation there"
    assert sentence in top and sentence in own
    assert "N agent steps ago" not in top


def test_undo_list_with_no_sessions_says_there_is_nothing_to_undo(repo: Path, env: dict) -> None:
    proc = run_kimi(["undo", "--list"], repo, env)
    assert proc.returncode == 2
    assert "nothing to undo: no session in this workspace yet" in proc.stderr
    assert "continue" not in proc.stderr


@pytest.mark.parametrize("command", ["pack", "undo"])
def test_a_bad_option_of_a_fast_command_looks_like_any_other(repo: Path, env: dict, command: str) -> None:
    proc = run_kimi([command, "--no-such-option"], repo, env)
    assert proc.returncode == 2
    assert f"Usage: kimi {command} [OPTIONS]" in proc.stderr and "No such option: --no-such-option" in proc.stderr


def _typer_options(name: str) -> set[str]:
    import typer

    from kimi_cli.cli.subcommands import register

    app = typer.Typer(add_completion=False)
    register(app, only=name)
    command = typer.main.get_command(app)
    return {opt for param in command.params for opt in param.opts if opt.startswith("-")}


def _argparse_options(name: str) -> set[str]:
    """The options the fast path's argparse parser takes (read from the parser it builds)."""
    import argparse

    captured: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.parse_known_args

    def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> object:
        captured.append(self)
        raise SystemExit(0)

    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign,assignment]
    try:
        module = __import__(f"kimi_cli.cli.{name}", fromlist=["cli_main"])
        assert module.cli_main([]) is None
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
    return {opt for action in captured[0]._actions for opt in action.option_strings}


@pytest.mark.parametrize("name", ["pack", "undo"])
def test_the_fast_path_parses_exactly_the_options_the_help_shows(name: str) -> None:
    assert _argparse_options(name) == _typer_options(name) - {"--help", "-h"}


def test_pack_task_lists_files_by_rank(tmp_path: Path, env: dict) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "aaa_unrelated.py").write_text("def unrelated():\n    return 1\n" * 20)
    (root / "zzz_parser.py").write_text("def parse_config(text):\n    '''parse the config file'''\n    return text\n")
    (root / "mmm_other.py").write_text("VALUE = 3\n")
    out = run_kimi(["pack", "--task", "fix parse_config in zzz_parser.py", str(root)], tmp_path, env).stdout
    rows = [line for line in out.splitlines() if re.search(r"│\s+\d+ │ \w+\.py", line)]
    names = [re.search(r"(\w+\.py)", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert names and names[0] == "zzz_parser.py", out  # the file the task names comes first, not alphabetically
    assert any(re.search(r"rank\s*┃\s*file", line) for line in out.splitlines()), out
