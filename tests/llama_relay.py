"""A real llama-server behind a scripted model: the server counts, checks and evaluates every request kimi
sends (its tokenizer, its window, its "exceeds the available context size"), while a script decides what the
model answers, so a task takes the same steps on every run.

Each chat request goes to llama-server as kimi sent it, but with `stream: false` and, for a scripted answer,
one token to write (the prompt is still tokenized, checked against the window and evaluated); a real answer
gets kimi's budget, up to REAL_ANSWER_TOKENS (how long SmolLM2 goes on is chance: 9 tokens one run, all of a
3,162-token budget the next, 800 s on a shared core; the fit is checked on the budget kimi sent). The relay keeps
kimi's own answer budget and llama-server's prompt count for each request (`sizes`), and answers kimi in
kimi's own SSE shape: the script's tool calls or text, or llama-server's real answer (entry {"real": True}),
with llama-server's usage. An error from llama-server goes back to kimi as it came.

GET /v1/models, /props, /health and POST /tokenize, /apply-template are passed through.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from llama_support import THREADS, model_path
from support import free_port, require, wait_until

ANSWER_FIELDS = ("max_completion_tokens", "max_tokens")
REAL_ANSWER_TOKENS = 64
OVERFLOW_LINE = "exceeds the available context size"


@dataclass
class Sent:
    """One chat request: its answer budget (kimi's), llama-server's prompt count, or its refusal."""

    budget: int | None
    field: str | None
    prompt_tokens: int | None
    status: int
    summary: bool  # kimi's compaction summary request (no tools, the summariser's system prompt)


@dataclass
class Llama:
    base: str  # http://127.0.0.1:PORT
    n_ctx: int
    log: Path
    proc: subprocess.Popen[bytes]

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user + system): what a run cost it, whatever else loads the machine."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def overflow_lines(self) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines() if OVERFLOW_LINE in line]


@contextmanager
def llama_server(n_ctx: int) -> Iterator[Llama]:
    exe = os.environ.get("KIMI_LLAMA_SERVER", "")
    require("llama-server", bool(exe) and os.access(exe, os.X_OK), f"not built (KIMI_LLAMA_SERVER={exe!r})")
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-window-{port}.log"
    proc = subprocess.Popen(
        [exe, "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port), "-c", str(n_ctx), "-np", "1",
         "--jinja", *THREADS],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"llama-server exited; its log:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(healthy, timeout=180, what="llama-server to become healthy", interval=0.3)
        yield Llama(base, n_ctx, log, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class Relay:
    llama: Llama
    script: list[dict[str, Any]]
    sent: list[Sent] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> Relay:
        relay = self

        class Handler(_Handler):
            owner = relay

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def entry_for(self, body: dict[str, Any]) -> dict[str, Any]:
        summary = not body.get("tools") and "compacting the working memory" in json.dumps(body["messages"][:1])
        if summary:
            return {"text": "Summary: the files were read; the task is to describe the repository.", "summary": True}
        return self.script.pop(0) if self.script else {"text": "done"}


def _forward(base: str, path: str, body: bytes | None, method: str) -> tuple[int, bytes, str]:
    request = urllib.request.Request(base + path, data=body, method=method,
                                     headers={"content-type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=900) as response:
            return response.status, response.read(), response.headers.get("content-type", "application/json")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("content-type", "application/json")


class _Handler(BaseHTTPRequestHandler):
    owner: Relay
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._reply(*_forward(self.owner.llama.base, self.path, None, "GET"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._reply(*_forward(self.owner.llama.base, self.path, raw, "POST"))
            return
        body = json.loads(raw)
        self.owner.bodies.append(body)
        entry = self.owner.entry_for(body)
        field_name = next((f for f in ANSWER_FIELDS if f in body), None)
        budget = body.get(field_name) if field_name else None
        forwarded = {k: v for k, v in body.items() if k not in ("stream", "stream_options", *ANSWER_FIELDS)}
        forwarded["stream"] = False
        forwarded["max_tokens"] = min(budget, REAL_ANSWER_TOKENS) if entry.get("real") and budget else 1
        status, answer, kind = _forward(self.owner.llama.base, "/v1/chat/completions",
                                        json.dumps(forwarded).encode(), "POST")  # fmt: skip
        data = json.loads(answer) if answer.startswith(b"{") else {}
        usage = data.get("usage") or {}
        self.owner.sent.append(Sent(budget, field_name, usage.get("prompt_tokens"), status,
                                    bool(entry.get("summary"))))  # fmt: skip
        if status != 200:
            self._reply(status, answer, kind)
            return
        if entry.get("real"):
            text = data["choices"][0]["message"].get("content") or ""
            entry = {"text": text}
        self._stream(entry, usage)

    def _reply(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, entry: dict[str, Any], usage: dict[str, Any]) -> None:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n".encode()

        events = [chunk({"role": "assistant", "content": entry.get("text", "")})]
        calls = entry.get("tool_calls") or []
        for index, call in enumerate(calls):
            fn = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
            events.append(chunk({"tool_calls": [{"index": index, "id": f"call_{index}_{len(self.owner.sent)}",
                                                 "type": "function", "function": fn}]}))  # fmt: skip
        events.append(chunk({}, "tool_calls" if calls else "stop"))
        events.append(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        events.append(b"data: [DONE]\n\n")
        payload = b"".join(events)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
