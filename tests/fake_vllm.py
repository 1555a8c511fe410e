#!/usr/bin/env python3
"""Stands in for `vllm serve` in tests: a real HTTP server whose behaviour FAKE_VLLM_MODE chooses.

ok: healthy after FAKE_VLLM_DELAY seconds; never: never healthy; oom / port: print vLLM's error and exit.
It writes its pid to FAKE_VLLM_PIDFILE so tests can check it is gone after a stop. With VLLM_API_KEY set it
asks for that key on /v1, as vLLM does (/health stays open).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    if os.environ.get("FAKE_VLLM_PIDFILE"):
        with open(os.environ["FAKE_VLLM_PIDFILE"], "w") as fh:
            fh.write(str(os.getpid()))
    print("INFO fake vllm starting with", " ".join(sys.argv[1:]), flush=True)
    if mode == "oom":
        time.sleep(0.5)
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        sys.exit(1)
    if mode == "port":
        print("OSError: [Errno 98] Address already in use", flush=True)
        sys.exit(1)
    ready_at = time.monotonic() + float(os.environ.get("FAKE_VLLM_DELAY", "1.0"))
    name = arg("--served-model-name", "model")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            if mode == "never" or time.monotonic() < ready_at:
                self.send_response(503)
                self.end_headers()
                return
            key = os.environ.get("VLLM_API_KEY")
            if key and self.path.startswith("/v1") and self.headers.get("Authorization") != f"Bearer {key}":
                self.send_response(401)
                self.end_headers()
                return
            body = (
                b"{}"
                if self.path == "/health"
                else json.dumps({"object": "list", "data": [{"id": name, "object": "model"}]}).encode()
            )
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((arg("--host", "127.0.0.1"), int(arg("--port", "8000"))), Handler)
    signal.signal(signal.SIGTERM, lambda *_: (print("INFO shutting down", flush=True), sys.exit(0)))
    server.serve_forever()


if __name__ == "__main__":
    main()
