"""FetchURL against loopback servers (HTML, JSON, a redirect to the metadata address, 10 MB), and the
$web_search round trip as Moonshot documents it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results, trust_folder, wait_until

PAGE = b"""<!doctype html><html><head><title>Widget docs</title></head><body>
<nav>Home | Pricing | Login</nav><main><h1>Install</h1><p>Run the installer, then:</p>
<pre><code>widget --init</code></pre><table><tr><th>flag</th><th>meaning</th></tr><tr><td>-v</td><td>verbose</td></tr>
</table></main><footer>cookie banner</footer></body></html>"""


class Site(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []  # "host path" of every request, for the redirect tests
    dribbled: ClassVar[list[int]] = []  # bytes /slow managed to send before the client hung up

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        Site.seen.append(f"{self.headers.get('host', '').split(':')[0]} {self.path}")
        if self.path == "/to-other-host":  # 127.0.0.1 -> localhost: the same server under another host name
            self.send_response(302)
            self.send_header("location", f"http://localhost:{self.server.server_address[1]}/data.json")
            self.send_header("content-length", "0")
            self.end_headers()
        elif self.path == "/slow":  # one byte every 0.25 s, 400 bytes: 100 s unless the client gives up
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", "400")
            self.end_headers()
            sent = 0
            with contextlib.suppress(OSError):
                for _ in range(400):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    sent += 1
                    time.sleep(0.25)
            Site.dribbled.append(sent)
        elif self.path == "/page.html":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif self.path == "/data.json":
            self._send(200, "application/json", json.dumps({"version": 3, "ok": True}).encode())
        elif self.path == "/to-metadata":
            self.send_response(302)
            self.send_header("location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("content-length", "0")
            self.end_headers()
        elif self.path == "/big.txt":
            self._send(200, "text/plain", b"0123456789abcdef\n" * (10 * 1024 * 1024 // 17))
        else:
            self._send(404, "text/plain", b"no")

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stopped reading (the 5 MB cap)
            self.wfile.write(body)


@pytest.fixture
def site() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def web_config(repo: Path, allowed_hosts: list[str] | None = None) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    hosts = ", ".join(f'"{h}"' for h in allowed_hosts or [])
    (repo / ".kimi" / "config.toml").write_text(
        f'[web]\nallowed_private_hosts = ["127.0.0.1"]\nallowed_hosts = [{hosts}]\n'
    )
    trust_folder(repo)  # the user's own project settings (kimi_cli.hostsafe.trust)


def test_a_page_from_the_prompt_arrives_as_markdown_without_its_navigation(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    web_config(repo)
    url = f"{site}/page.html"
    server.add({"tool_calls": [tool_call("FetchURL", {"url": url}, "f")]}, {"text": "read"})
    proc = run_kimi(["-p", f"build what {url} describes"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (page,) = tool_results(server, 1)
    assert "HTTP 200, text/html" in page and "# Install" in page and "widget --init" in page and "```" in page
    assert "| flag | meaning |" in page
    assert "Pricing" not in page and "cookie banner" not in page


def test_redirect_to_the_metadata_address_is_refused_and_big_pages_are_capped(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    web_config(repo, ["127.0.0.1"])
    server.add(
        {"tool_calls": [tool_call("FetchURL", {"url": f"{site}/to-metadata"}, "r"),
                        tool_call("FetchURL", {"url": f"{site}/big.txt"}, "b"),
                        tool_call("FetchURL", {"url": f"{site}/data.json"}, "j")]},
        {"text": "ok"},
    )  # fmt: skip
    proc = run_kimi(["-p", "fetch"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    redirect, big, data = tool_results(server, 1)
    assert "refused: 169.254.169.254" in redirect
    assert "stopped reading at 5 MB" in big and len(big) < 45_000 and "characters cut" in big
    assert "is in " in big and "fetch-1.md" in big
    assert '"version": 3' in data


def test_a_host_nobody_named_is_refused_headless_with_the_rule_to_add(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    web_config(repo)
    server.add({"tool_calls": [tool_call("FetchURL", {"url": f"{site}/data.json"}, "j")]}, {"text": "ok"})
    proc = run_kimi(["-p", "look something up"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(server, 1)
    assert "was not fetched" in result and 'allowed_hosts = ["127.0.0.1"]' in result


def test_private_addresses_are_refused_unless_allowed(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    server.add({"tool_calls": [tool_call("FetchURL", {"url": f"{site}/data.json"}, "j")]}, {"text": "ok"})
    proc = run_kimi(["-p", f"read {site}/data.json", "--yolo"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "refused: 127.0.0.1 resolves to 127.0.0.1" in tool_results(server, 1)[0]


def test_web_search_round_trip_sends_the_arguments_back_unchanged(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    arguments = '{"search_result":{"search_id":"s-42"},"usage":{"total_tokens":1234}}'
    server.add({"tool_calls": [tool_call("$web_search", arguments, "$web_search:0")]}, {"text": "found it"})
    env = {**env, "KIMI_PROVIDER": "moonshot", "KIMI_BASE_URL": server.base_url}
    proc = run_kimi(["-p", "what is new in python 3.14?"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert {"type": "builtin_function", "function": {"name": "$web_search"}} in server.requests[0]["tools"]
    assistant, tool = server.requests[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "$web_search", "arguments": arguments}
    assert tool == {"role": "tool", "tool_call_id": "$web_search:0", "content": arguments}


def test_web_tools_can_be_turned_off(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "config.toml").write_text("[web]\nenabled = false\n")
    server.add({"text": "ok"})
    assert run_kimi(["-p", "x"], repo, env, server).returncode == 0
    names = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "FetchURL" not in names and "$web_search" not in names


# --- redirects leave what was approved; one deadline for the whole fetch ---------------------------------


def redirect_config(repo: Path, allowed_hosts: list[str]) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    hosts = ", ".join(f'"{h}"' for h in allowed_hosts)
    (repo / ".kimi" / "config.toml").write_text(
        f'[web]\nallowed_private_hosts = ["127.0.0.1", "localhost"]\nallowed_hosts = [{hosts}]\n'
    )
    trust_folder(repo)


def test_a_redirect_to_an_unapproved_host_is_refused_headless(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    redirect_config(repo, ["127.0.0.1"])  # allowed: 127.0.0.1; not allowed: localhost
    Site.seen.clear()
    server.add({"tool_calls": [tool_call("FetchURL", {"url": f"{site}/to-other-host"}, "r")]}, {"text": "ok"})
    proc = run_kimi(["-p", "fetch it"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(server, 1)
    assert "redirects to http://localhost:" in result and "was not fetched" in result
    assert '"version": 3' not in result
    assert Site.seen == ["127.0.0.1 /to-other-host"]  # the second host never got a request


def test_a_redirect_to_an_allowed_host_is_followed(
    repo: Path, env: dict, server: ScriptedModelServer, site: str
) -> None:
    redirect_config(repo, ["127.0.0.1", "localhost"])
    server.add({"tool_calls": [tool_call("FetchURL", {"url": f"{site}/to-other-host"}, "r")]}, {"text": "ok"})
    proc = run_kimi(["-p", "fetch it"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(server, 1)
    assert '"version": 3' in result and "/data.json: HTTP 200" in result


@pytest.mark.parametrize("answer", ["no:not there", "yes"])
def test_an_interactive_session_is_asked_again_at_a_hop_to_another_host(answer: str, site: str) -> None:
    from kimi_cli.approval.engine import Approver
    from kimi_cli.approval.rules import Rules
    from kimi_cli.tools.base import ToolContext
    from kimi_cli.tools.errors import ToolError
    from kimi_cli.tools.web import FetchURL
    from kimi_cli.tools.workspace import Workspace

    questions: list[str] = []

    async def ask(question: str, rule: str) -> str:
        questions.append(question)
        return answer

    approver = Approver(Rules(), "auto", ask, network=False)
    tool = FetchURL(approver, ["127.0.0.1"], ["127.0.0.1", "localhost"])
    params = FetchURL.Params(url=f"{site}/to-other-host")
    try:
        output = asyncio.run(tool.run(params, ToolContext(workspace=Workspace(Path.cwd())))).output
    except ToolError as exc:
        output = str(exc)
    assert questions == [f"fetch http://localhost:{site.rsplit(':', 1)[1]}/data.json"]
    assert ('"version": 3' in output) == (answer == "yes")
    assert ("the user said no: not there" in output) == (answer != "yes")


def test_a_server_that_dribbles_is_cut_at_the_total_deadline(site: str) -> None:
    from kimi_cli.web.fetch import FetchError, fetch_url

    Site.dribbled.clear()
    with pytest.raises(FetchError, match=r"did not finish within 1\.5 s"):
        asyncio.run(fetch_url(f"{site}/slow", ["127.0.0.1"], timeout=1.5))  # each read comes well within 1.5 s
    wait_until(lambda: Site.dribbled, what="the server to notice the client left")
    assert Site.dribbled[0] < 100  # cut early: far from the 400 bytes it would send


def test_the_fetch_deadline_comes_from_config(
    repo: Path, env: dict, server: ScriptedModelServer, site: str, home: Path
) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('[web]\nfetch_timeout = 1\nallowed_private_hosts = ["127.0.0.1"]\n')
    server.add({"tool_calls": [tool_call("FetchURL", {"url": f"{site}/slow"}, "s")]}, {"text": "ok"})
    proc = run_kimi(["-p", f"read {site}/slow"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "did not finish within 1 s" in tool_results(server, 1)[0]
