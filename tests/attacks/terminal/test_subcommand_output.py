"""Every kimi subcommand that prints model- or workspace-derived text prints it through the sanitiser.

The finding: `kimi init` printed the AGENTS.md diff the model wrote as it was, so OSC 52 (a clipboard write),
SGR 8 (hidden text) and cursor moves reached the terminal; the interactive /init already sanitised it. This
walks the Typer app's commands: each one is either driven here with hostile text (ESC, OSC, BEL, C1) where it
comes from (the model, the workspace's files and names, its settings, a server's answers) in a real pty, or
listed in EXEMPT with the reason it prints none. A command added later fails the walk until it is one or the
other. Colours from kimi's own rendering are fine; the hostile sequences must arrive written out.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, run_kimi, tool_call

HOSTILE = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[8mhidden\x1b[0m\x1b[2A\x9b2J\x9d0;owned\x9c"
RAW = [b"\x1b]52", b"\x07", b"\x1b[8m", b"\x1b[2A", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x9c"]
SHOWN = b"\\x1b]52;c;ZWNobyBwd25lZA==\\x07"  # what the user must see instead
TOML_HOSTILE = HOSTILE.encode("unicode_escape").decode().replace("\\x", "\\u00")  # as a TOML string holds it

EXEMPT = {
    "acp": "JSON-RPC for an editor on stdout, never a terminal; strings are JSON-escaped (tests/e2e/test_acp.py)",
    "engine plan": "numbers and a family name (kimi_k3, kimi_k2, other) computed from config.json, none of its text",
    "engine serve": "needs vLLM; prints the user's own flags, and vLLM's log only as the error of a failed start",
    "engine stop": "fixed text",
    "mcp add": "the user's own arguments, into the user's own config",
    "mcp remove": "the user's own arguments",
    "doctor": "every finding and fix goes through util.sanitize.visible (cli/doctor.py); not yet driven here",
    "mcp serve": "MCP JSON-RPC on stdout (or HTTP), never a terminal; strings JSON-escaped (test_mcp_serve.py)",
    "worktree list": "worktree names held to [A-Za-z0-9._-] and their branches (kimi/NAME); not yet driven here",
    "worktree merge": "the name given and git's merge result; not yet driven here",
    "worktree remove": "names the worktree the user gave (held to [A-Za-z0-9._-]) and fixed text",
}


def commands() -> list[str]:
    """Every leaf command of the Typer app, as `group sub`."""
    import typer

    from kimi_cli.cli.main import app

    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        for name, sub in sorted(getattr(node, "commands", {}).items()):
            full = f"{prefix} {name}".strip()
            if getattr(sub, "commands", None):
                walk(sub, full)
            else:
                found.append(full)

    walk(typer.main.get_command(app), "")
    return found


def in_terminal(args: list[str], cwd: Path, env: dict, server: ScriptedModelServer | None = None,
                stdin: str | None = None, timeout: float = 120) -> bytes:  # fmt: skip
    """Everything `kimi ARGS` writes to a real terminal (stdout and stderr both), as bytes."""
    full = {**env, "TERM": "xterm-256color", "LANG": "C.UTF-8", "COLUMNS": "200", "KIMI_API_KEY": TEST_KEY}
    if server is not None:
        full.update({"KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url})
    exe = kimi_executable()
    child = pexpect.spawn(exe[0], [*exe[1:], *args], cwd=str(cwd), env=full, dimensions=(50, 200), timeout=timeout)
    if stdin is not None:
        child.send(stdin)
        child.sendeof()
    out = child.read()
    child.close()
    return out


def assert_inert(out: bytes, shown: bool = True) -> None:
    for raw in RAW:
        assert raw not in out, (raw, out[-2000:])
    if shown:  # kimi's own colours (reverse video around a written-out escape) aside
        assert SHOWN in re.sub(rb"\x1b\[[0-9;]*m", b"", out), out[-2000:]


# --- the commands, each with hostile text where it really comes from ------------------------------------------


def run_init(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    text = f"# calc\n\nRun `make test`.{HOSTILE}\n"
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "AGENTS.md", "content": text}, "w1")]},
               {"text": "wrote AGENTS.md"})  # fmt: skip
    out = in_terminal(["init"], repo, env, server)
    assert_inert(out)
    assert b"+# calc" in out and b"+Run `make test`." in out  # the diff reads as a diff
    assert (repo / "AGENTS.md").read_text() == text  # the file itself is exactly what was written


def run_sessions(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "ok"})
    assert run_kimi(["-p", f"hello {HOSTILE}"], repo, env, server).returncode == 0
    assert_inert(in_terminal(["sessions"], repo, env))


def run_export(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": f"printf '%s' 'x{HOSTILE}'"}, "s1")]},
               {"text": f"answer {HOSTILE}"})  # fmt: skip
    assert run_kimi(["-p", f"export me {HOSTILE}"], repo, env, server).returncode == 0
    assert_inert(in_terminal(["export"], repo, env))
    assert_inert(in_terminal(["export", "--format", "json"], repo, env), shown=False)  # JSON escapes: \u001b
    out = in_terminal(["export", "--format", "html"], repo, env)  # a page is written to a file, not printed
    assert_inert(out, shown=False)
    assert b"exported session" in out


def run_undo(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    name = f"note{HOSTILE}.txt"
    server.add({"tool_calls": [tool_call("WriteFile", {"path": name, "content": "x\n"}, "w1")]}, {"text": "done"})
    assert run_kimi(["-p", f"write {HOSTILE}"], repo, env, server).returncode == 0
    assert_inert(in_terminal(["undo", "--list"], repo, env))
    assert_inert(in_terminal(["undo", "--yes"], repo, env))
    assert not (repo / name).exists()


def mcp_project(repo: Path) -> str:
    name = f"srv{HOSTILE}"
    (repo / ".kimi").mkdir(exist_ok=True)
    servers = {"mcpServers": {name: {"command": f"/nonexistent/{HOSTILE}", "args": [HOSTILE]}}}
    (repo / ".kimi" / "mcp.json").write_text(json.dumps(servers))
    return name


def run_mcp_list(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    mcp_project(repo)
    assert_inert(in_terminal(["mcp", "list"], repo, env))


def run_mcp_test(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    name = mcp_project(repo)
    assert_inert(in_terminal(["mcp", "test", name], repo, env))


def run_pack(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / f"h{HOSTILE}.py").write_text(f"x = '{HOSTILE}'\n")
    assert_inert(in_terminal(["pack", "--all"], repo, env), shown=False)  # the table may fold the long name
    assert_inert(in_terminal(["pack", "--format", "text"], repo, env))


def run_prompt(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "AGENTS.md").write_text(f"# rules\n{HOSTILE}\n")
    assert_inert(in_terminal(["prompt"], repo, env))


def run_trust(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "config.toml").write_text(f'[approval]\nallow = ["make {TOML_HOSTILE}"]\n')
    assert_inert(in_terminal(["trust"], repo, env))
    assert_inert(in_terminal(["trust", "--list"], repo, env))


def run_ci_repair(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    test = "printf '\\033]52;c;ZWNobyBwd25lZA==\\007\\033[8mhidden\\033[2A'; exit 1"  # a failing test that prints them
    server.add({"text": f"could not fix it {HOSTILE}"})
    out = in_terminal(["ci-repair", "--test", test, "--max-attempts", "1", "--sandbox", "none"], repo, env, server)
    assert_inert(out)


def run_engine_status(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.model = f"model{HOSTILE}"
    assert_inert(in_terminal(["engine", "status", "--url", server.base_url], repo, env))


def run_engine_bench(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.model = f"model{HOSTILE}"
    server.add(*({"text": "a few words of answer"} for _ in range(4)))
    args = ["engine", "bench", "--url", server.base_url, "--context", "1k", "--concurrency", "1", "--requests", "1"]
    assert_inert(in_terminal(args, repo, env))


def run_login(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.model = f"model{HOSTILE}"
    args = ["login", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--api-key-stdin"]
    assert_inert(in_terminal(args, repo, env, stdin="sk-test-key\n"))


def run_diff(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    name = f"d{HOSTILE}.txt"
    server.add({"tool_calls": [tool_call("WriteFile", {"path": name, "content": f"x{HOSTILE}\n"}, "w1")]},
               {"text": "done"})  # fmt: skip
    assert run_kimi(["-p", "write", "--yolo"], repo, env, server).returncode == 0
    out = in_terminal(["diff"], repo, env)
    assert_inert(out)
    assert b"+x" in out  # the patch reads as a patch
    assert_inert(in_terminal(["diff", "--stat"], repo, env), shown=False)  # git quotes the odd name: "d\033]52..."


COVERED: dict[str, Callable[[Path, dict, ScriptedModelServer], None]] = {
    "init": run_init, "sessions": run_sessions, "export": run_export,
    "undo": run_undo, "mcp list": run_mcp_list, "mcp test": run_mcp_test,
    "pack": run_pack, "prompt": run_prompt, "trust": run_trust, "ci-repair": run_ci_repair,
    "engine status": run_engine_status, "engine bench": run_engine_bench, "login": run_login, "diff": run_diff,
}  # fmt: skip


def test_every_subcommand_is_driven_here_or_says_why_it_prints_no_hostile_text() -> None:
    listed = set(commands())
    assert listed == set(COVERED) | set(EXEMPT), "a subcommand is neither driven nor exempted here"
    assert not set(COVERED) & set(EXEMPT)


@pytest.mark.parametrize("name", sorted(COVERED))
def test_hostile_text_reaches_the_terminal_written_out(
    name: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)
    COVERED[name](repo, env, server)
