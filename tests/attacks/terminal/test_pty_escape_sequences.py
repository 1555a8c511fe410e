"""The interactive UI in a real pty: escape sequences from the model, tools and file names are shown, never
obeyed; the approval panel shows exactly the bytes that will run and offers no `always` for them."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pexpect
from terminal import PROMPT, finish, spawn

from scripted_server import ScriptedModelServer
from support import tool_call, tool_results

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
TITLE = "\x1b]0;owned\x07"
HIDDEN = "touch M # \x1b[2K\x1b[1Gpytest -q tests/test_api.py"


def plain(screen: str) -> str:
    """What the terminal output says, without the UI's own styling sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)


def allow_pytest(home: Path) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[approval]\nallow = ["pytest"]\n')


def test_the_approval_panel_shows_the_hidden_touch_and_offers_no_always(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    allow_pytest(home)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_api.py").write_text("def test_ok():\n    assert True\n")
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": HIDDEN}, "h1")]},
        {"tool_calls": [tool_call("Shell", {"command": "pytest -q tests/test_api.py"}, "p1")]},
        {"text": "finished"},
    )
    child = spawn(repo, env, server, "--sandbox", "none")
    raw = io.StringIO()
    child.logfile_read = raw
    child.send("run the tests\r")
    child.expect("run this command")
    child.expect_exact("y/n · Enter = no ›")
    child.wait_for_output("is not offered")  # the panel, printed above the question (before or after it shows)
    shown = plain(raw.getvalue())
    assert "touch M # \\x1b[2K\\x1b[1Gpytest -q tests/test_api.py" in shown
    assert "`always` is not offered" in shown
    child.send("n")  # one key: no Enter needed
    child.expect("why not")
    child.send("\r")
    child.expect("finished")  # the legitimate pytest ran under the rule without a second question
    child.expect(PROMPT)
    assert finish(child) == 0
    assert "\x1b[2K\x1b[1Gpytest" not in raw.getvalue()
    assert raw.getvalue().count("run this command") == 1
    assert not (repo / "M").exists()
    assert "the user said no" in tool_results(server, 1)[0]
    assert "1 passed" in tool_results(server, 2)[-1]


def test_osc_52_from_the_model_a_tool_and_a_file_name_is_shown_not_obeyed(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / f"evil{OSC52}.py").write_text("x = 1\n")

    def octal(text: str) -> str:
        return text.replace("\x1b", "\\033").replace("\x07", "\\007")

    answer = f"Answer {OSC52} and [bold red]markup[/bold red] [link=http://x]l[/link] end"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": f"printf '{octal(OSC52 + TITLE)}'"}, "s1")]},
        {"tool_calls": [tool_call("Glob", {"pattern": "evil*"}, "g1")]},
        {"reasoning": f"hmm {OSC52}", "text": answer},
    )
    child = spawn(repo, env, server, "--sandbox", "bwrap")
    raw = io.StringIO()
    child.logfile_read = raw
    child.send("/reasoning\r")
    child.expect(PROMPT)
    child.send("go\r")
    child.expect_exact("end")
    child.expect(PROMPT)
    assert finish(child) == 0
    seen = raw.getvalue()
    assert "\x1b]52" not in seen and "\x1b]0;owned" not in seen
    assert plain(seen).count("\\x1b]52;c;ZWNobyBwd25lZA==\\x07") >= 3  # answer, reasoning, tool output or file name
    assert "[bold red]markup[/bold red]" in plain(seen) and "[link=http://x]l[/link]" in plain(seen)


def test_a_lone_surrogate_in_an_answer_is_shown_and_the_session_goes_on(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "half \ud800 pair"}, {"text": "second answer"})
    child = spawn(repo, env, server)
    child.send("one\r")
    child.expect_exact("half \\ud800 pair")
    child.expect(PROMPT)
    child.send("two\r")
    child.expect("second answer")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert pexpect.EOF
