"""A session's text is untrusted: a model or a command can print HTML meant to run in whoever opens the export
(a script, an event handler, a `javascript:` link, a remote stylesheet or image that reports the page was
opened). In the HTML export all of it is text: escaped, Markdown rendered with raw HTML and images off, and
a Content-Security-Policy that runs only the page's own script (by hash) and loads nothing."""

from __future__ import annotations

import re
from pathlib import Path

from chromium_support import page_requests, render

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

BEACON = "http://127.0.0.1:9/opened"
HOSTILE_OUTPUT = (
    f"</pre></details><script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED'\">"
    f'<link rel=stylesheet href="{BEACON}.css"><style>body{{background:url({BEACON}.png)}}</style>'
)
HOSTILE_ANSWER = (
    f"Done.<script>document.title='PWNED'</script>\n\n[docs](javascript:document.title='PWNED') "
    f'![pixel]({BEACON}.gif) <img src="{BEACON}.jpg">'
)


def test_html_in_a_session_neither_runs_nor_loads(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add(
        {"text": "<b onmouseover=alert(1)>looking</b>",
         "tool_calls": [tool_call("Shell", {"command": f"printf '%s' '{HOSTILE_OUTPUT}'"}, "s1")]},
        {"text": HOSTILE_ANSWER},
    )  # fmt: skip
    proc = run_kimi(["-p", f"render this {HOSTILE_OUTPUT}", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    session_id = result_json(proc)["session_id"]
    page = tmp_path / "page.html"
    assert run_kimi(["export", session_id, "--format", "html", "-o", str(page)], repo, env).returncode == 0
    rendered = render(page, tmp_path / "chromium")
    dom = rendered.dom
    assert "<title>render this" in dom and "PWNED</title>" not in dom  # no injected script ran
    assert dom.count("<script>") == 1  # the page's own
    assert not re.search(r"<(img|link|iframe)[\s>]", dom)  # no element made from the session's text
    assert not re.search(r"<[a-z]+\s[^>]*\bon[a-z]+=", dom)  # no event handler on any element
    assert 'href="javascript:' not in dom
    assert "&lt;script&gt;document.title=" in dom  # shown as the text it was
    assert page_requests(rendered, page) == []
    # Beside it, the legitimate use: the page's own script did run (search count filled in).
    assert 'id="search-count">2 steps<' in dom
