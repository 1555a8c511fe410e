"""Custom slash commands: markdown files in .kimi/commands/, .claude/commands/ and the user's own folders.

Headless (`kimi -p "/name args"`) here; the terminal (pty) and ACP in test_features_terminal.py and
test_features_acp.py. Each widening part (`!cmd`, allowed-tools) sits beside its legitimate use.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kimi_cli.extensions.custom_commands.expand import allow_rules, expand
from kimi_cli.extensions.custom_commands.loader import load_commands, parse

from scripted_server import ScriptedModelServer
from support import run_kimi, trust_folder

REVIEW = """---
description: Review the staged changes
argument-hint: [focus]
allowed-tools: Bash(git diff:*), Bash(git status:*)
---
Review the changes on this branch with a focus on $ARGUMENTS. First word: $1.

Status:
!`git status --short`

Look at @calc.py closely.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def sent_prompt(server: ScriptedModelServer) -> str:
    users = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "user"]
    return str(users[-1])


@pytest.fixture
def kimi_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KIMI_HOME", str(home / ".kimi"))
    from kimi_cli.hostsafe import trust

    trust._DECIDED.clear()
    return home


def test_names_namespaces_and_precedence(tmp_path: Path, kimi_home: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude/commands/review.md", "project claude review")
    write(ws / ".kimi/commands/frontend/component.md", "---\ndescription: a component\n---\nMake $1")
    write(kimi_home / ".kimi/commands/review.md", "user review")
    write(kimi_home / ".claude/commands/mine.md", "# Mine\nuser claude command")
    found = load_commands(ws)
    assert sorted(found) == ["frontend:component", "mine", "review"]
    assert found["review"].body == "project claude review" and found["review"].source == "project"
    assert found["frontend:component"].description == "a component"
    assert found["mine"].description == "Mine" and found["mine"].source == "user"


def test_arguments_positionals_and_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "calc.py", "def add(a, b):\n    return a - b\n")
    command = parse("review", REVIEW, "project", ".kimi/commands", "review.md")
    ran: list[str] = []

    async def shell(line: str) -> str:
        ran.append(line)
        return " M calc.py"

    out = asyncio.run(expand(command, "errors 'and types'", ws, shell, may_run=True))
    assert "with a focus on errors 'and types'. First word: errors." in out.prompt
    assert " M calc.py" in out.prompt and ran == ["git status --short"]
    assert '<file path="calc.py">\ndef add(a, b):' in out.prompt and out.files == ["calc.py"]
    assert command.allowed_tools == ["Bash(git diff:*)", "Bash(git status:*)"]
    assert allow_rules(command.allowed_tools) == ["git diff", "git status"]


def test_arguments_inside_a_shell_line_are_data(tmp_path: Path) -> None:
    command = parse("log", "!`git log -n $1`", "user", "~/.kimi/commands", "log.md")
    ran: list[str] = []

    async def shell(line: str) -> str:
        ran.append(line)
        return ""

    asyncio.run(expand(command, "'3; touch pwned'", tmp_path, shell, may_run=True))
    assert ran == ["git log -n '3; touch pwned'"]


def test_a_file_mention_outside_the_workspace_is_not_included(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "ok.txt", "fine")
    write(tmp_path / "secret.txt", "TOP-SECRET")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    command = parse("x", "read @../secret.txt and @link.txt and @ok.txt", "project", ".kimi/commands", "x.md")
    out = asyncio.run(expand(command, "", ws, None, may_run=False))
    assert "TOP-SECRET" not in out.prompt and "fine" in out.prompt and out.files == ["ok.txt"]


def test_claude_review_command_works_in_p_and_runs_its_shell_line_in_the_sandbox(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    write(repo / ".claude/commands/review.md", REVIEW)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    trust_folder(repo, home)  # its `!git status` and allowed-tools widen what kimi does
    server.add({"text": "Looks fine."})
    proc = run_kimi(["-p", "/review errors", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    prompt = sent_prompt(server)
    assert prompt.startswith("Review the changes on this branch with a focus on errors. First word: errors.")
    assert "M calc.py" in prompt  # `git status --short` ran (in the sandbox) and its output took its place
    assert '<file path="calc.py">' in prompt and "/review" not in prompt
    assert json.loads(proc.stdout)["command"] == "review"


def test_an_untrusted_projects_shell_lines_do_not_run(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    write(repo / ".claude/commands/review.md", f"Review.\n!`touch {marker}; echo listed`\n")
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "/review"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists() and "not run: the folder is not trusted" in sent_prompt(server)
    assert "not trusted" in proc.stderr


def test_a_user_commands_shell_line_runs_in_the_sandbox_not_on_the_host(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    write(home / ".kimi/commands/whoami.md", "Facts: !`cat ~/.kimi/config.toml 2>&1 | head -1; echo in-sandbox`")
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "/whoami"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    prompt = sent_prompt(server)
    assert "in-sandbox" in prompt and "base_delay" not in prompt  # ~/.kimi is hidden from the sandbox


def test_an_unknown_slash_word_is_sent_as_written(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "/usr/bin is where binaries live"], repo, env, server)
    assert proc.returncode == 0 and sent_prompt(server) == "/usr/bin is where binaries live"
