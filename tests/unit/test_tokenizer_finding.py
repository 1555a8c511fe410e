"""What a server's /tokenize answered is kept for the next session (issue 47: a start does only what it needs):
a plain OpenAI-compatible API answered neither dialect, so every later start skipped the two round trips it
cost; llama-server's dialect is asked first; an answer that said nothing of /tokenize (a 500, a 401) is not
kept. Real HTTP on loopback: the scripted model server and a small server that answers with a status."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from kimi_cli.llm import server_tokens
from kimi_cli.llm.server_tokens import for_endpoint

from scripted_server import ScriptedModelServer


def fresh_process() -> None:
    """What a new kimi process starts from: no tokenizer shared yet (the cache file is what carries over)."""
    server_tokens._SHARED.clear()


@pytest.fixture(autouse=True)
def _own_cache(private_home: Path) -> Iterator[None]:
    fresh_process()
    yield
    fresh_process()


def test_a_server_without_tokenize_is_not_asked_by_the_next_session(private_home: Path) -> None:
    with ScriptedModelServer() as plain:  # answers 404 to /tokenize
        first = for_endpoint(plain.base_url, "k", "m")
        assert first.count("def add(a, b): return a + b") is None and first.asked == 2  # both dialects
        cached = json.loads((private_home / ".kimi" / "endpoints.json").read_text())
        assert cached[f"{plain.base_url} m"]["tokenize"] == ""
        fresh_process()
        second = for_endpoint(plain.base_url, "k", "m")
        assert second.count("anything") is None and second.asked == 0
        fresh_process()
        other_model = for_endpoint(plain.base_url, "k", "another")  # the finding is the endpoint's and model's
        assert other_model.count("x") is None and other_model.asked == 2


def test_a_llama_server_is_asked_in_its_own_dialect_first(private_home: Path) -> None:
    for dialect in ("vllm", "llama"):
        fresh_process()
        with ScriptedModelServer(tokenize=dialect) as srv:
            assert for_endpoint(srv.base_url, "k", "m").count("x y") == 2
            fresh_process()
            again = for_endpoint(srv.base_url, "k", "m")
            assert again.dialect == dialect
            assert again.count("a b c") == 3 and again.asked == 1  # no try of the other dialect first


def test_the_window_and_the_finding_share_an_entry(private_home: Path) -> None:
    from kimi_cli.config import Endpoint
    from kimi_cli.llm.endpoint_info import remember_window

    with ScriptedModelServer() as plain:
        for_endpoint(plain.base_url, "k", "m").count("x")
        remember_window(Endpoint(provider="openai", base_url=plain.base_url, api_key="k", model="m"), 8192, "an error")
        entry = json.loads((private_home / ".kimi" / "endpoints.json").read_text())[f"{plain.base_url} m"]
        assert entry["context_length"] == 8192 and entry["tokenize"] == ""


class _Status(BaseHTTPRequestHandler):
    status = 500
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append(self.path)
        body = b'{"error": "no"}'
        self.send_response(self.status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("status", [500, 401, 429])
def test_an_answer_that_says_nothing_of_tokenize_is_not_kept(private_home: Path, status: int) -> None:
    _Status.status, _Status.seen = status, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        assert for_endpoint(url, "k", "m").count("x") is None
        fresh_process()
        assert for_endpoint(url, "k", "m").count("x") is None
        assert len(_Status.seen) == 4  # asked again: a failing server may count once it is well
        cache = private_home / ".kimi" / "endpoints.json"
        assert not cache.exists() or "tokenize" not in json.loads(cache.read_text()).get(f"{url} m", {})
    finally:
        httpd.shutdown()
        httpd.server_close()
