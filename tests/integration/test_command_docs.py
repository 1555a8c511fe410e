"""/help lists every command from the registry (tests/e2e/test_features_terminal.py shows custom ones there);
this checks that the README's command table names every built-in the terminal registers."""

from __future__ import annotations

import re

from support import ROOT_DIR

ROOT = ROOT_DIR


def registered() -> set[str]:
    names: set[str] = set()
    for source in (ROOT / "kimi_cli" / "ui" / "interactive").glob("*.py"):
        if source.name == "registry.py":  # its docstring's example is not a command
            continue
        names |= set(re.findall(r'SlashCommand\(\s*"([a-z][a-z0-9:-]*)"', source.read_text()))
    return names


def test_the_readme_lists_every_built_in_command() -> None:
    readme = (ROOT / "README.md").read_text()
    names = registered()
    assert {"help", "plan", "hooks", "skills", "fork", "init"} <= names
    missing = sorted(n for n in names if not re.search(rf"`/{re.escape(n)}\b", readme))
    assert missing == [], f"README.md does not list: {', '.join('/' + n for n in missing)}"
