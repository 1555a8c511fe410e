"""A scripted model server for the side-by-side start-up bench (bench/peers_startup.py), in each peer's own API:
Anthropic's Messages API (Claude Code: POST /v1/messages, streamed), OpenAI's Responses API (Codex CLI: POST
/v1/responses, streamed) and the chat completions API (kimi, kimi-cli: POST /v1/chat/completions, streamed).

Every request is answered with a short text ("hi"), the same for every agent, so that what differs between them is
their own start-up and what they send. Each request's path, size in bytes and body are logged (--log FILE, one JSON
line a request) for bytes per request and the K3.1 price of what each agent sends.
Usage: python3 bench/peer_server.py --port-file FILE --log FILE
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "hi"


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def messages_events(model: str) -> list[bytes]:
    """Anthropic's Messages stream: message_start, one text block, message_delta with the stop, message_stop."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ANSWER}},
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


def responses_events(model: str) -> list[bytes]:
    """OpenAI's Responses stream: created, one message item with its text, completed with the usage."""
    item = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    }
    base = {"id": "resp_bench", "object": "response", "created_at": int(time.time()), "model": model}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 11,
    }
    return [
        _sse("response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}),
        _sse(
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
        ),
        _sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": "msg_bench",
                "output_index": 0,
                "content_index": 0,
                "delta": ANSWER,
            },
        ),
        _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse(
            "response.completed",
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": [item], "usage": usage},
            },
        ),
    ]


def chat_events(model: str) -> list[bytes]:
    """The chat completions stream: one delta with the text, then the finish with the usage, then [DONE]."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    first = {
        **base,
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}, "finish_reason": None}],
    }
    last = {
        **base,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
    return [_sse(None, first), _sse(None, last), b"data: [DONE]\n\n"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_lock = threading.Lock()
    log_path = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, body: bytes) -> None:
        with self.log_lock, open(self.log_path, "a") as fh:
            fh.write(
                json.dumps(
                    {"path": self.path, "bytes": len(body), "at": time.time(), "body": body.decode("utf-8", "replace")}
                )
                + "\n"
            )

    def do_GET(self) -> None:  # model lists and health checks: an empty list
        data = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self._record(body)
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            request = {}
        model = str(request.get("model", "bench"))
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            return self._json({"input_tokens": max(1, len(body) // 4)})
        if path.endswith("/messages"):
            events = messages_events(model)
        elif path.endswith("/responses"):
            events = responses_events(model)
        elif path.endswith("/chat/completions"):
            events = chat_events(model)
        else:
            return self._json({"ok": True})
        if request.get("stream") is False and path.endswith("/messages"):
            return self._json(
                {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": ANSWER}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                }
            )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file, "w") as fh:
        fh.write(f"http://127.0.0.1:{server.server_address[1]}")
    server.serve_forever()


if __name__ == "__main__":
    main()
