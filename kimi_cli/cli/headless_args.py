"""The main command's flags read without Typer, so that `kimi -p TASK` (what every CI job and script pays for)
never imports Typer, builds its command tree or coerces 30 options through pydantic (~0.1 s of a trivial run).

Only a plain command line is read here: options of the main command, each spelled out (`--flag`, `--opt VALUE`,
`--opt=VALUE`, `-p VALUE`). Anything else (a subcommand, help, `--version`, `--`, grouped or glued short options,
an unknown option, a value this reader would read differently) is left to Typer, which parses it or says what is
wrong, in one style for every command. tests/unit/test_headless_args.py checks this table against the Typer
declarations in kimi_cli/cli/main.py (flags, kinds, repeatability) and both readers against each other on a
corpus of command lines.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# (flags, the parameter's name in kimi_cli.cli.start.start, kind): kinds are flag, str, int, float, path, and
# strs and paths for a repeatable option.
OPTIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("-p", "--prompt"), "prompt", "str"),
    (("--output-format",), "output_format", "str"),
    (("--image",), "image", "strs"),
    (("--continue", "-c"), "continue_", "flag"),
    (("--resume", "-r"), "resume", "str"),
    (("--model",), "model", "str"),
    (("--provider",), "provider", "str"),
    (("--base-url",), "base_url", "str"),
    (("--max-steps",), "max_steps", "int"),
    (("--max-tokens",), "max_tokens", "int"),
    (("--context-length",), "context_length", "int"),
    (("--mcp-config",), "mcp_config", "paths"),
    (("--effort",), "effort", "str"),
    (("--no-thinking",), "no_thinking", "flag"),
    (("--yolo",), "yolo", "flag"),
    (("--plan",), "plan", "flag"),
    (("--output-schema",), "output_schema", "path"),
    (("--visual-check",), "visual_check", "str"),
    (("--visual-target",), "visual_target", "float"),
    (("--visual-size",), "visual_size", "str"),
    (("--fork",), "fork", "str"),
    (("--trust",), "trust_folder", "flag"),
    (("--sandbox",), "sandbox", "str"),
    (("--allow-network",), "allow_network", "flag"),
    (("--workdir", "-w"), "workdir", "path"),
    (("--branch",), "branch", "str"),
    (("--worktree",), "worktree", "str"),
    (("--attempts",), "attempts", "int"),
    (("--check",), "check", "str"),
    (("--patch",), "patch", "path"),
    (("--no-pack",), "no_pack", "flag"),
    (("--pack-budget",), "pack_budget", "int"),
    (("--compact-at",), "compact_at", "float"),
    (("-v", "--verbose"), "verbose", "flag"),
)
_BY_FLAG = {flag: (name, kind) for flags, name, kind in OPTIONS for flag in flags}
_NUMBER = frozenset("0123456789")


def _int(text: str) -> int | None:
    digits = text[1:] if text[:1] in ("+", "-") else text
    return int(text) if digits and set(digits) <= _NUMBER else None


def _float(text: str) -> float | None:
    if not text or not set(text) <= _NUMBER | {".", "e", "E", "+", "-"}:
        return None  # inf, nan, 1_0, spaces: Typer's reading decides those
    try:
        return float(text)
    except ValueError:
        return None


def _value(kind: str, text: str) -> tuple[bool, Any]:
    if kind in ("str", "strs"):
        return True, text
    if kind in ("path", "paths"):
        return bool(text), Path(text)
    number = _int(text) if kind == "int" else _float(text)
    return number is not None, number


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The main command's parameters from `argv` (after kimi_cli.cli.start.expand_argv), or None when Typer
    must read it."""
    values: dict[str, Any] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("-") or token in ("-", "--"):
            return None  # a subcommand, an argument, or the end of options: Typer's
        flag, eq, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        found = _BY_FLAG.get(flag)
        if found is None:
            return None
        name, kind = found
        if kind == "flag":
            if eq:
                return None
            values[name] = True
            continue
        if eq:
            text = attached
        elif index < len(argv):
            text, index = argv[index], index + 1
        else:
            return None  # a value is missing: Typer says so
        ok, value = _value(kind, text)
        if not ok:
            return None
        if kind in ("strs", "paths"):
            values.setdefault(name, []).append(value)
        else:
            values[name] = value
    return values


def run_without_typer(argv: list[str]) -> None:
    """Run the main command when its flags are plain (exits); return when Typer must read them."""
    from kimi_cli.cli.start import expand_argv, start

    expanded = expand_argv(argv)
    values = parse(expanded)
    if values is None:
        return
    sys.argv[1:] = expanded  # as kimi_cli.cli.main.run leaves it: attempts hand their children these flags
    if values.pop("verbose", False):
        from kimi_cli.util.logs import setup_logging

        setup_logging(True)
    try:
        start(**values)
    except KeyboardInterrupt:
        sys.exit(4)
