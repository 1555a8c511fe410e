"""Terminal hygiene and hostile strings: escape sequences from the model, tools and file names never reach
the terminal raw in `-p` text mode; JSON modes stay exact JSON; a lone surrogate never loses the session
log or the result. (The interactive UI's side is in test_interactive_hygiene.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from kimi_cli.util.jsonsafe import dumps
from kimi_cli.util.sanitize import exact, is_clean, visible, visible_text

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes "echo pwned" to the clipboard
TITLE = "\x1b]0;owned\x07"
ERASE = "\x1b[2K\x1b[1G"


def test_visible_writes_out_every_escape_and_keeps_newlines_and_tabs() -> None:
    text = f"a{OSC52}b{TITLE}c{ERASE}d\x9b31m\x9d8;;http://x\x9c e\u202eevil\tf\ng\rh\x08i\ud800"
    out = visible(text)
    assert is_clean(out.replace("\t", "").replace("\n", ""))
    assert "\\x1b]52;c;" in out and "\\x9b31m" in out and "\\u202e" in out and "\\ud800" in out
    assert "\\x0d" in out and "\\x08" in out and "\tf\ng" in out
    out.encode("utf-8")  # a lone surrogate no longer breaks the encoder


def test_colours_in_tool_output_may_be_dropped_but_other_escapes_stay_visible() -> None:
    assert visible("\x1b[32mPASSED\x1b[0m", drop_colors=True) == "PASSED"
    assert visible(f"\x1b[32mok{OSC52}", drop_colors=True) == "ok\\x1b]52;c;ZWNobyBwd25lZA==\\x07"


def test_exact_shows_a_crlf_and_rich_text_is_never_markup() -> None:
    assert exact("a\r\nb") == "a\\x0d\nb"
    text = visible_text("[bold red]x[/] [link=http://evil]y[/link]" + OSC52)
    assert text.plain.startswith("[bold red]x[/] [link=http://evil]y[/link]")
    assert "\x1b" not in text.plain and text.spans[0].style != "bold red"


def test_json_text_is_exact_and_inert() -> None:
    value = {"text": f"{OSC52}\x9b\u202e\ud800"}
    line = dumps(value)
    assert json.loads(line) == value
    assert is_clean(line)
    line.encode("utf-8")


def hostile_script(server: ScriptedModelServer, repo: Path) -> None:
    (repo / f"name{TITLE}.py").write_text("x = 1\n")
    server.add(
        {
            "tool_calls": [
                tool_call("Shell", {"command": f"printf '{OSC52.encode('unicode_escape').decode()}'; false"}, "c1")
            ]
        },
        {"tool_calls": [tool_call("ReadFile", {"path": f"missing{OSC52}.py"}, "c2")]},
        {"reasoning": f"thinking {OSC52}", "text": f"Done.{OSC52} {TITLE} [bold]not markup[/bold] {ERASE}end"},
    )


def test_headless_text_mode_never_prints_an_escape_raw(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    hostile_script(server, repo)
    proc = run_kimi(["-p", "go", "--sandbox", "bwrap"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\x9b" not in stream
    assert "Done.\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in proc.stdout  # shown, not obeyed
    assert "[bold]not markup[/bold]" in proc.stdout
    assert "missing\\x1b]52" in proc.stderr  # the tool error, made visible


def test_headless_json_output_is_the_exact_text(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    hostile_script(server, repo)
    proc = run_kimi(["-p", "go", "--sandbox", "bwrap", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout
    assert result_json(proc)["text"] == f"Done.{OSC52} {TITLE} [bold]not markup[/bold] {ERASE}end"


def test_stream_json_is_exact_json_lines(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    hostile_script(server, repo)
    proc = run_kimi(["-p", "go", "--sandbox", "bwrap", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    texts = [e.get("text", "") for e in events]
    assert any(OSC52 in t for t in texts if isinstance(t, str))


def test_a_lone_surrogate_in_the_answer_keeps_the_log_and_the_result(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "printf 'tool \\355\\240\\200 out'"}, "c1")]},
        {"text": "half \ud800 a pair", "reasoning": "r \udfff"},
    )
    proc = run_kimi(["-p", "go", "--sandbox", "bwrap", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "half \ud800 a pair"
    logs = list((home / ".kimi" / "sessions").rglob("context.jsonl"))
    assert logs
    records = [json.loads(line) for line in logs[0].read_text(encoding="utf-8").splitlines()]
    answers = [r["message"].get("content") for r in records if r.get("kind") == "message"]
    assert "half \ud800 a pair" in answers
    tool_messages = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages and "tool" in tool_messages[0]


def test_a_lone_surrogate_in_text_mode_is_shown_not_a_crash(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "half \ud800 a pair"})
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "half \\ud800 a pair" in proc.stdout
