"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It speaks the real wire protocol: SSE over chunked HTTP/1.1, tool-call deltas, reasoning_content,
usage (OpenAI style or Moonshot style inside the last choice), and injected faults: HTTP errors
with Retry-After, and streams that break off mid-way. Each request consumes the next script entry.

Entry keys:
  text, reasoning           strings streamed in pieces of `chunk_size` characters
  tool_calls                [{"id", "name", "arguments": dict | raw string}]
  usage                     {"prompt_tokens", "completion_tokens", "cached_tokens"}
  usage_style               "openai" (final chunk, prompt_tokens_details) | "moonshot" (inside the choice)
  error, retry_after, body  answer with this HTTP status instead of a stream
  break_after               send this many chunks, then drop the connection
  delay                     seconds to sleep before each chunk; hang: seconds before the first byte
  stall_after, stall        after this many chunks, go silent for `stall` seconds (then send the rest)
  empty                     answer 200 with an event stream that holds no chunk at all
  no_usage                  never send usage, whatever stream_options asks
  repeat_name               repeat the function name in every tool-call chunk (as some servers do)
  match                     only for a request whose first user message contains this text (concurrent
                            subagents: each one's answers find it whatever the order of requests)
With `tokenize="llama"` or `"vllm"` the server also counts tokens as llama-server and vLLM do (POST /tokenize,
llama's /apply-template), one token per word or punctuation mark: `tokenized` records each text it counted.
Run as a program for benchmarks: python tests/scripted_server.py SCRIPT.json --port-file F
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedModelServer:
    """Serves a list of scripted answers, one per chat request, and records every request."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        model: str = "kimi-test",
        default: dict[str, Any] | None = None,
        model_info: dict[str, Any] | None = None,
        props: dict[str, Any] | None = None,
        tokenize: str | None = None,
    ) -> None:
        self.script: list[dict[str, Any]] = list(script or [])
        self.model_info = {"context_length": 1048576} if model_info is None else model_info  # in /v1/models
        self.props = props  # llama.cpp's GET /props, when set
        self.tokenize = tokenize  # "llama" | "vllm": answer POST /tokenize (and llama's /apply-template)
        self.tokenized: list[str] = []
        self.template_tools = True  # False: /apply-template leaves the tools out, as SmolLM2's template does
        self.required_key: str | None = None  # when set, GET /models answers 401 without `Bearer KEY`
        self.default = default  # answered when the script is used up (benchmarks); None: an error instead
        self.model = model
        self.more_models: list[str] = []  # listed by /models after `model` (a picker's choices)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.serve_seconds: list[float] = []
        self.timeline: list[tuple[float, float, int]] = []  # (body received, reply finished, body bytes)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *entries: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(entries)

    def start(self, port: int = 0) -> ScriptedModelServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def next_entry(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any] | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            first_user = next((m for m in body.get("messages", []) if m.get("role") == "user"), {})
            text = json.dumps(first_user.get("content", ""))
            for index, entry in enumerate(self.script):
                if "match" not in entry or entry["match"] in text:
                    return self.script.pop(index)
            return dict(self.default) if self.default is not None else None

    def offered_tools(self, index: int) -> list[str]:
        """The names of the tools request `index` offers: its top-level block, then those declared later in
        system messages' `tools` (K3 models: a server ready after request 1 joins there, issue 41)."""
        body = self.requests[index]
        later = [t for m in body.get("messages", []) if m.get("role") == "system" for t in m.get("tools") or []]
        return [t["function"]["name"] for t in [*(body.get("tools") or []), *later]]

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def setup(self) -> None:
        super().setup()
        # Like production servers: without this, Nagle + delayed ACK stall each small SSE chunk ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        key = self.owner.required_key
        if key and self.path.rstrip("/").endswith("/models") and self.headers.get("authorization") != f"Bearer {key}":
            self._json(401, {"error": {"message": "invalid api key", "type": "authentication_error"}})
            return
        if self.path.rstrip("/").endswith("/models"):
            data = {
                "object": "list",
                "data": [{"id": self.owner.model, "object": "model", "owned_by": "scripted", **self.owner.model_info}]
                + [{"id": name, "object": "model", "owned_by": "scripted"} for name in self.owner.more_models],
            }
            self._json(200, data)
        elif self.path.rstrip("/").endswith("/props") and self.owner.props is not None:
            self._json(200, self.owner.props)
        elif self.path.rstrip("/").endswith("/health"):
            self._json(200, {"status": "ok"})
        elif self.path.rstrip("/").endswith("/metrics"):
            served = len(self.owner.requests)
            text = (
                "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                f'vllm:num_requests_running{{model_name="{self.owner.model}"}} 1.0\n'
                f'vllm:num_requests_waiting{{model_name="{self.owner.model}"}} 2.0\n'
                f'vllm:kv_cache_usage_perc{{model_name="{self.owner.model}"}} 0.25\n'
                f'vllm:prefix_cache_queries_total{{model_name="{self.owner.model}"}} {100 + served}.0\n'
                f'vllm:prefix_cache_hits_total{{model_name="{self.owner.model}"}} 75.0\n'
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.owner.tokenize and self.path.rstrip("/") in ("/tokenize", "/apply-template"):
            self._tokenize(self.path.rstrip("/"), json.loads(raw or b"{}"))
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        received = time.time()
        body = json.loads(raw or b"{}")
        entry = self.owner.next_entry(body, {k.lower(): v for k, v in self.headers.items()})
        try:
            self._answer(entry, body)
        finally:
            self.owner.serve_seconds.append(time.perf_counter() - started)
            self.owner.timeline.append((received, time.time(), len(raw)))

    def _tokenize(self, path: str, body: dict[str, Any]) -> None:
        dialect = self.owner.tokenize
        if path == "/apply-template" and dialect == "llama":
            tools = body.get("tools") if self.owner.template_tools else None
            self._json(200, {"prompt": render_chat(body.get("messages", []), tools)})
            return
        if dialect == "llama" and isinstance(body.get("content"), str):
            text = body["content"]
        elif dialect == "vllm" and isinstance(body.get("prompt"), str) and body.get("model"):
            text = body["prompt"]
        elif dialect == "vllm" and isinstance(body.get("messages"), list) and body.get("model"):
            text = render_chat(body["messages"], body.get("tools"))
        else:
            self._json(400, {"error": {"message": "scripted tokenizer: not this request's shape"}})
            return
        self.owner.tokenized.append(text)
        count = len(count_tokens(text))
        self._json(
            200, {"count": count, "tokens": list(range(count))} if dialect == "vllm" else {"tokens": [0] * count}
        )

    def _answer(self, entry: dict[str, Any] | None, body: dict[str, Any]) -> None:
        if entry is None:
            self._json(400, {"error": {"message": "scripted server: script exhausted", "type": "invalid_request"}})
            return
        if entry.get("hang"):
            time.sleep(float(entry["hang"]))
        if "error" in entry:
            headers = {"retry-after": str(entry["retry_after"])} if "retry_after" in entry else {}
            default = {"error": {"message": f"scripted error {entry['error']}", "type": "engine_overloaded"}}
            self._json(int(entry["error"]), entry.get("body", default), headers)
            return
        if self.owner.tokenize and "usage" not in entry:  # the usage its own tokenizer gives the prompt
            prompt = len(count_tokens(render_chat(body.get("messages", []), body.get("tools"))))
            entry = {**entry, "usage": {**_estimate_usage(entry, body), "prompt_tokens": prompt}}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        if entry.get("empty"):
            self._chunk(b"")
            return
        break_after = entry.get("break_after")
        for count, event in enumerate(_sse_events(entry, self.owner.model, body), start=1):
            if entry.get("delay"):
                time.sleep(float(entry["delay"]))
            if break_after is not None and count > int(break_after):
                self._drop()
                return
            if entry.get("stall") and count == int(entry.get("stall_after", 1)) + 1:
                time.sleep(float(entry["stall"]))  # a generation that stopped producing mid-answer
            self._chunk(f"data: {event}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        # Half a chunk, then a hard close: the client sees a broken chunked body mid-stream.
        self.wfile.write(b'40\r\ndata: {"partial')
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)


def count_tokens(text: str) -> list[str]:
    """The scripted tokenizer: a word or a punctuation mark is a token."""
    return re.findall(r"\w+|[^\w\s]", text)


def render_chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """A ChatML rendering, the tools as JSON in a system block (as most chat templates do)."""
    out = [f"<tools>{json.dumps(tools)}</tools>"] if tools else []
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if message.get("tool_calls"):
            text += json.dumps(message["tool_calls"])
        out.append(f"<|im_start|>{message.get('role')}\n{text}<|im_end|>")
    return "\n".join(out) + "\n<|im_start|>assistant\n"


def _pieces(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _sse_events(entry: dict[str, Any], model: str, body: dict[str, Any]) -> Iterator[str]:
    size = int(entry.get("chunk_size", 16))
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None) -> str:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish, **(extra or {})}
        return json.dumps(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(entry.get("reasoning", ""), size):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(entry.get("text", ""), size):
        yield chunk({"content": piece})
    calls = entry.get("tool_calls") or []
    for index, call in enumerate(calls):
        args = call.get("arguments", {})
        args_text = args if isinstance(args, str) else json.dumps(args)
        head = {
            "index": index,
            "id": call.get("id", f"{call['name']}:{index}"),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(args_text, size):
            fn = {"arguments": piece, **({"name": call["name"]} if entry.get("repeat_name") else {})}
            yield chunk({"tool_calls": [{"index": index, "function": fn}]})
    finish = "tool_calls" if calls else entry.get("finish_reason", "stop")
    if entry.get("no_usage"):
        yield chunk({}, finish)
        return
    usage = dict(entry.get("usage") or _estimate_usage(entry, body))
    cached = int(usage.pop("cached_tokens", 0))
    usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    if entry.get("usage_style") == "moonshot":
        yield chunk({}, finish, {"usage": {**usage, "cached_tokens": cached}})
    else:
        yield chunk({}, finish)
        stream_opts = body.get("stream_options") or {}
        if stream_opts.get("include_usage"):
            yield json.dumps(
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": {**usage, "prompt_tokens_details": {"cached_tokens": cached}},
                }
            )


def _estimate_usage(entry: dict[str, Any], body: dict[str, Any]) -> dict[str, int]:
    prompt_chars = len(json.dumps(body.get("messages", [])))
    out_chars = len(entry.get("text", "")) + len(json.dumps(entry.get("tool_calls", [])))
    return {
        "prompt_tokens": prompt_chars // 4,
        "completion_tokens": max(1, out_chars // 4),
        "cached_tokens": 0,
    }


def main() -> None:
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("script", help="JSON file with a list of entries")
    parser.add_argument("--port-file", help="write the base URL here once listening")
    parser.add_argument("--stats-file", help="write per-request serve times here on exit")
    args = parser.parse_args()
    with open(args.script) as fh:
        server = ScriptedModelServer(json.load(fh)).start()
    if args.port_file:
        with open(args.port_file, "w") as fh:
            fh.write(server.base_url)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    if args.stats_file:
        with open(args.stats_file, "w") as fh:
            stats = {
                "serve_seconds": server.serve_seconds,
                "requests": len(server.requests),
                "timeline": server.timeline,
            }
            json.dump(stats, fh)


if __name__ == "__main__":
    main()
