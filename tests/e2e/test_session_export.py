"""Session exports as a user makes them: a real 30-step `kimi -p` session against the scripted server, exported
with `kimi export` as HTML (rendered in headless Chromium: 30 steps in the DOM, the three plots, the script
ran, a screenshot, and no request from the page), Markdown and JSON; `kimi sessions --open` writes the page;
an interrupted session with a torn last line exports too."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from chromium_support import page_requests, render
from PIL import Image
from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

STEPS = 30
COMPACT_AT = 12  # this step's request reports a nearly full window: the history is compacted after it
TRACKER = "http://127.0.0.1:9/tracker.png"  # what a page that loads remote content would fetch


def usage(step: int) -> dict[str, int]:
    prompt = 950_000 if step == COMPACT_AT else 10_000 + 1_000 * step
    return {"prompt_tokens": prompt, "completion_tokens": 100 + step, "cached_tokens": int(prompt * 0.8)}


def thirty_step_session(repo: Path, env: dict, server: ScriptedModelServer) -> str:
    """29 steps of tool calls (reads, an edit with a diff, commands, one failing, a retried request, a compaction)
    and a final answer in Markdown that names a remote image."""
    (repo / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    for step in range(1, STEPS):
        if step == 8:
            server.add({"error": 429, "retry_after": 0})
        if step == 3:
            call = tool_call("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}, "e3")
        elif step == 5:
            call = tool_call("Shell", {"command": f"echo '<img src=\"{TRACKER}\">' && exit 3"}, "s5")
        elif step % 3 == 0:
            call = tool_call("Shell", {"command": f"echo step {step}"}, f"s{step}")
        elif step % 2 == 0:
            call = tool_call("Glob", {"pattern": f"**/*{step}*"}, f"g{step}")
        else:
            call = tool_call("ReadFile", {"path": "app.py", "line_offset": 1, "n_lines": step}, f"r{step}")
        server.add({"text": f"Step {step}: looking.", "tool_calls": [call], "usage": usage(step)})
        if step == COMPACT_AT:
            server.add({"text": "SUMMARY: reading app.py, calc.py fixed."})
    final = f"All done: `add` now adds.\n\n| file | change |\n|---|---|\n| calc.py | fixed |\n\n![chart]({TRACKER})"
    server.add({"text": final, "usage": usage(STEPS)})
    proc = run_kimi(["-p", "fix calc.py and look around", "--output-format", "json"], repo, env, server,
                    timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = result_json(proc)
    assert result["steps"] == STEPS
    return str(result["session_id"])


def test_the_html_export_of_a_30_step_session_renders_offline(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    session_id = thirty_step_session(repo, env, server)
    page = tmp_path / "session.html"
    proc = run_kimi(["export", session_id, "--format", "html", "-o", str(page)], repo, env)
    assert proc.returncode == 0, proc.stderr
    assert page.stat().st_mode & 0o777 == 0o600  # it holds the conversation
    text = page.read_text()
    assert 'http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;;' in text
    assert "<link" not in text and 'src="http' not in text  # nothing to fetch: CSS and script are inline

    rendered = render(page, tmp_path / "chromium")
    dom = rendered.dom
    assert dom.count('<details class="step"') == STEPS
    assert f'id="search-count">{STEPS} steps<' in dom  # the page's script ran (the policy let it)
    for plot in ("tokens", "latency", "cost"):
        assert f'id="plot-{plot}"' in dom
    assert dom.count('<g class="bar" data-step=') == 2 * STEPS  # a bar per step in each bar plot
    assert dom.count('<g class="mark" data-step=') == 1  # the compaction on the cost plot
    assert 'class="compaction"' in dom and 'class="retry"' in dom
    assert '<pre class="hl">' in dom and '<span class="gi">+    return a + b</span>' in dom  # the diff, highlighted
    assert "<table>" in dom  # the answer's Markdown, rendered
    assert "&lt;img src=" in dom and "<img" not in dom  # a tool's HTML is text; the Markdown image is no image
    assert page_requests(rendered, page) == []
    assert not [url for url, _ in rendered.requests if "127.0.0.1:9" in url]

    shot = Image.open(rendered.screenshot)
    assert shot.size == (1280, 2400)
    assert len(shot.convert("RGB").getcolors(1 << 20) or []) > 20  # a drawn page, not a blank one


def test_the_net_log_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """The control for the check above: a page with a remote image shows its request in the log."""
    page = tmp_path / "control.html"
    page.write_text(f'<!DOCTYPE html><html><body><img src="{TRACKER}"><p>control</p></body></html>')
    rendered = render(page, tmp_path / "chromium")
    assert TRACKER in page_requests(rendered, page)


def test_markdown_and_json_exports_hold_every_step(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    session_id = thirty_step_session(repo, env, server)
    exported = run_kimi(["export", session_id[:-2], "--format", "json"], repo, env)
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert data["format"] == "kimi-session-export" and data["id"] == session_id
    totals = data["totals"]
    assert (totals["steps"], totals["compactions"], totals["retries"], totals["turns"]) == (STEPS, 1, 1, 1)
    steps = [s for t in data["turns"] for s in t["steps"]]
    assert [s["number"] for s in steps] == list(range(1, STEPS + 1))
    assert steps[COMPACT_AT]["compaction"]["tokens_before"] > 0  # marked on the step after the full request
    assert steps[2]["calls"][0]["diff"].startswith("--- a/calc.py")
    shell = steps[4]["calls"][0]
    assert shell["is_error"] and shell["exit_code"] == 3 and shell["title"].startswith("$ echo")
    assert steps[0]["usage"] == {"uncached": 2200, "cached": 8800, "output": 101}
    priced = sum(s["usage"]["uncached"] * 2.0 + s["usage"]["cached"] * 0.2 + s["usage"]["output"] * 10.0 for s in steps)
    assert abs(totals["cost_usd"] - priced / 1e6) < 1e-6  # K3.1 Pro's rates per million: miss, hit, output
    assert data["turns"][0]["end"]["reason"] == "done"

    markdown = run_kimi(["export", "--format", "md"], repo, env)  # no id: the latest session here
    assert markdown.returncode == 0, markdown.stderr
    md = markdown.stdout
    assert md.count("\n### Step ") == STEPS
    assert "<details><summary>StrReplaceFile: calc.py" in md and "```diff\n--- a/calc.py" in md
    assert "**Compaction:**" in md and "> retry 1" in md
    assert "| calc.py | fixed |" in md  # the answer stays Markdown


def test_sessions_open_writes_the_page_where_no_browser_is(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "hello there"})
    session_id = result_json(run_kimi(["-p", "say hello", "--output-format", "json"], repo, env, server))["session_id"]
    proc = run_kimi(["sessions", "--open", session_id], repo, {k: v for k, v in env.items() if k != "DISPLAY"})
    assert proc.returncode == 0, proc.stderr
    page = Path(env["HOME"]) / ".kimi" / "exports" / f"{session_id}.html"
    assert f"wrote {page}" in proc.stdout and "no browser here" in proc.stdout
    assert "hello there" in page.read_text()


def test_an_interrupted_session_with_a_torn_last_line_exports(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "sleep 30"}, "slow")], "usage": usage(1)})
    term = Terminal.start(repo, env, server)
    try:
        term.wait_for("❯")
        term.line("run the slow thing")
        term.wait_for("sleep 30")
        term.child.kill(signal.SIGKILL)  # mid-call: no result, no step end, status still "running"
        term.wait_exit()
    finally:
        term.close()
    log = next((Path(env["HOME"]) / ".kimi" / "sessions").glob("*/*/context.jsonl"))
    with log.open("ab") as fh:
        fh.write(b'{"kind": "event", "event": {"type": "tool_res')  # a write cut short by the crash
    exported = run_kimi(["export", "--format", "json"], repo, env)
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert data["skipped_lines"] == 1
    step = data["turns"][0]["steps"][0]
    assert step["finished"] is False and step["calls"][0]["result"] is None
    assert data["turns"][0]["prompt"] == "run the slow thing"
    page = run_kimi(["export", "--format", "html"], repo, env)
    assert page.returncode == 0 and "no result (interrupted)" in page.stdout and "unfinished" in page.stdout


def test_approvals_asked_in_the_terminal_and_their_answers_are_exported(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch one.txt"}, "c1")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "c2")]},
        {"text": "finished"},
    )
    term = Terminal.start(repo, env, server, "--sandbox", "none")
    try:
        term.wait_for("❯")
        term.line("make files")
        term.wait_for("run this command?")
        term.send("y")
        term.wait_for("rm -rf build")
        term.send("n")
        term.wait_for("why not?")
        term.line("keep the build folder")
        term.wait_for("finished")
        assert term.exit() == 0
    finally:
        term.close()
    data = json.loads(run_kimi(["export", "--format", "json"], repo, env).stdout)
    calls = [c for t in data["turns"] for s in t["steps"] for c in s["calls"]]
    assert [c["approvals"] for c in calls] == [
        [{"kind": "shell", "subject": "touch one.txt", "outcome": "allowed", "answer": "yes", "reason": ""}],
        [{"kind": "shell", "subject": "rm -rf build", "outcome": "refused", "answer": "no",
          "reason": "the user said no: keep the build folder"}],
    ]  # fmt: skip
    markdown = run_kimi(["export", "--format", "md"], repo, env).stdout
    assert "Approval (shell): **refused**, the user said no" in markdown
