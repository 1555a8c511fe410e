"""Approval and trust questions show the whole command or list, in the terminal and over ACP.

The finding: over ACP a command's approval title was cut at 200 characters (tool-call cards at 120), so
`npm test`, 260 spaces, `; echo PWNED > marker` was approved as "npm test" and its tail ran; the trust
question's title was cut at 500 with no marker, and MCP servers came last, so a folder with enough harmless
asks hid the server that then ran on the host. Now (kimi_cli/frontends/questions.py) runs of blanks are counted
(`⎵×260`), control characters written out, and nothing is cut silently: past a limit a mark says how much
is left out and `always` (or trusting, for a list) is not offered. Trust asks come most dangerous first.
Beside each attack, the ordinary question it must not spoil.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
from terminal import Terminal

from kimi_cli.frontends.terminal.approval_view import approval_view

from acp_support import RecordingClient, run
from scripted_server import ScriptedModelServer
from support import tool_call

HIDDEN = "npm test" + " " * 260 + "; echo PWNED > marker"


class AskedClient(RecordingClient):
    """Keeps each permission request's options and details text too."""

    def __init__(self, answer: str = "allow_once") -> None:
        super().__init__(answer)
        self.options: list[list[str]] = []
        self.details: list[str] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.options.append([o.option_id for o in options])
        self.details.append("".join(c.content.text for c in tool_call.content or [] if c.type == "content"))
        return await super().request_permission(session_id, tool_call, options, **kwargs)


def ask_in_the_editor(repo: Path, env: dict, server: ScriptedModelServer, client: AskedClient, command: str) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": command}, "s1")]}, {"text": "ok"})

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="ask")
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run it")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"


# --- a command's approval ------------------------------------------------------------------------------------


def test_blanks_hiding_a_tail_are_counted_in_the_editors_question(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    client = AskedClient("reject")
    ask_in_the_editor(repo, env, server, client, HIDDEN)
    title = client.permissions[0].title
    assert title == "npm test⎵×260; echo PWNED > marker"  # the tail is on the card, next to what hid it
    assert "echo PWNED > marker" in client.details[0]
    assert client.permissions[0].raw_input == {"command": HIDDEN}  # the exact bytes, for the record
    card = next(u for u in client.updates if getattr(u, "session_update", "") == "tool_call")
    assert card.title == "Shell: npm test⎵×260; echo PWNED > marker"  # the tool-call card too
    assert not (repo / "marker").exists()


def test_a_command_past_the_title_limit_says_how_much_is_left_out_and_offers_no_always(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    command = "echo " + "a" * 3000 + " tail-word"
    client = AskedClient("reject")
    ask_in_the_editor(repo, env, server, client, command)
    title = client.permissions[0].title
    assert title.endswith("more characters not shown]") and "2,015 more characters" in title
    assert "allow_always" not in client.options[0]
    assert client.details[0].endswith("tail-word")  # the details hold it whole


def test_an_ordinary_command_is_asked_as_it_is_with_always_offered(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    client = AskedClient("allow_once")
    ask_in_the_editor(repo, env, server, client, "touch made.txt")
    assert client.permissions[0].title == "touch made.txt"
    assert client.options[0] == ["allow_once", "allow_always", "reject"]
    assert (repo / "made.txt").exists()


def test_the_terminal_counts_the_blanks_and_shows_the_tail(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": HIDDEN}, "s1")]}, {"text": "ok"})
    term = Terminal.start(repo, env, server, "--sandbox", "none", cols=80)
    try:
        term.wait_for("❯")
        term.line("run the tests")
        term.wait_for("run this command?")
        term.wait_for("Enter = no ›")
        screen = term.settle()
        assert "$ npm test⎵×260; echo PWNED > marker" in screen  # the tool's title line
        panel = screen[screen.index("run this command?") :]
        assert "npm test⎵×260; echo PWNED > marker" in panel  # and the question
        term.send("n")
        term.wait_for("why not?")
        term.line("no")
        term.wait_for("ok")
        assert term.exit() == 0
    finally:
        term.close()
    assert not (repo / "marker").exists()


def test_the_terminal_question_past_its_limit_offers_no_always() -> None:
    """The view is pure (command, rule) -> panel and keys: a plain command too long to show whole."""
    from rich.console import Console

    long = approval_view("make " + "x" * 30_000, "make")
    assert set(long.keys) == {"y", "n"}
    console = Console(width=100, record=True)
    console.print(long.renderable)
    text = console.export_text()
    assert "more characters not shown" in text and "`always` is not offered" in text
    ordinary = approval_view("make test", "make")
    assert set(ordinary.keys) == {"y", "a", "s", "n"}


# --- the folder's trust question -----------------------------------------------------------------------------

CONFIG = """\
[approval]
allow = ["make lint", "make test", "make docs", "make format", "make check", "make bench", "make build", "make dist"]
[sandbox]
allow_network = true
env_allow = ["LANG", "LC_ALL", "TZ", "TERM", "COLUMNS", "LINES", "PAGER", "EDITOR", "VISUAL", "TMPDIR", "SHELL_OPTS"]
[web]
allowed_hosts = ["docs.python.org", "pypi.org", "files.pythonhosted.org", "developer.mozilla.org", "readthedocs.io"]
allowed_private_hosts = ["docs.internal.example", "wiki.internal.example", "ci.internal.example", "git.internal.ex"]
"""


def asking_folder(repo: Path, commands: int = 0) -> None:
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text(CONFIG)
    servers = {"mcpServers": {"helper": {"command": "python3", "args": ["-m", "helper_server"]}}}
    (repo / ".kimi" / "mcp.json").write_text(json.dumps(servers))
    if commands:
        (repo / ".kimi" / "commands").mkdir()
        for n in range(commands):
            (repo / ".kimi" / "commands" / f"check{n}.md").write_text(f"Check: !`echo {n}`\n")


def trust_in_the_editor(repo: Path, env: dict, server: ScriptedModelServer) -> AskedClient:
    server.add({"text": "ok"})
    client = AskedClient("do_not_trust")

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    return client


def test_an_mcp_server_behind_many_harmless_asks_comes_first_in_the_editors_question(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    asking_folder(repo)
    client = trust_in_the_editor(repo, env, server)
    title = client.permissions[0].title
    assert title.index("start the MCP server 'helper'") < title.index("approve without asking")
    lines = client.details[0].splitlines()
    assert lines[0].startswith("• start the MCP server 'helper'") and len(lines) == 6
    assert client.options[0] == ["trust_folder", "do_not_trust"]


def test_a_list_too_long_to_show_cannot_be_trusted_from_the_editor(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    asking_folder(repo, commands=400)
    client = trust_in_the_editor(repo, env, server)
    title = client.permissions[0].title
    assert "(406, the most dangerous first)" in title and "more asks, listed in the details]" in title
    assert client.options[0] == ["do_not_trust"]
    assert "more not shown]" in client.details[0] and "kimi trust" in client.details[0]


def test_the_terminals_trust_question_lists_every_ask_most_dangerous_first(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    asking_folder(repo, commands=3)
    term = Terminal.start(repo, env, server, cols=120)
    try:
        term.wait_for("Trust this folder? y/N")
        shown = " ".join(term.transcript.split())
        term.send("n\r")
        term.wait_for("❯")
        assert term.exit() == 0
    finally:
        term.close()
    order = ["start the MCP server 'helper'", "fetch from private or local hosts", "approve without asking",
             "let its command /check2 run"]  # fmt: skip
    places = [shown.index(what) for what in order]
    assert places == sorted(places)
