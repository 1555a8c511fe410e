"""A small language server for the tests of kimi's LSP client (standard library only; it runs in the sandbox).

`python3 lsp_fake_server.py MODE [MARKS]`, speaking LSP over stdin/stdout. It publishes, with the document's
version, one error for each line that contains BAD ("bad line"). MODE changes how it misbehaves:
- ok: as above;
- flood-stderr: writes 256 MB to stderr while it answers (a server that logs without end);
- silent: reads everything and never answers (initialize included);
- crash: exits with code 3 right after initialized;
- huge: answers initialize with a Content-Length of 2 GB;
- spam: sends an endless stream of small notifications;
- slow-changes: answers a file's opening at once, each change only 8 s later (a server gone slow after start);
- dependents: as ok, and 0.3 s after each change it rechecks the other open documents, as pyright does: each
  gets one error ("broken by a dependency") while a changed document holds BREAKS.
With MARKS, each start appends a line to that file (how many times it started).
"""

from __future__ import annotations

import json
import os
import sys
import threading


def read_message(stream):  # type: ignore[no-untyped-def]
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length)) if length is not None else None


def send(message: dict) -> None:  # type: ignore[type-arg]
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri: str, version: int, text: str) -> None:
    diagnostics = [
        {"range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 3}}, "severity": 1,
         "code": "fake1", "source": "fake", "message": "bad line"}
        for n, line in enumerate(text.split("\n")) if "BAD" in line
    ]  # fmt: skip
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diagnostics}})  # fmt: skip


def republish_others(changed: str, docs: dict[str, tuple[int, str]]) -> None:
    broken = "BREAKS" in docs[changed][1]
    for uri, (version, _) in list(docs.items()):
        if uri == changed:
            continue
        diagnostics = [
            {
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                "severity": 1,
                "code": "fake2",
                "source": "fake",
                "message": "broken by a dependency",
            }
        ]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
              "params": {"uri": uri, "version": version, "diagnostics": diagnostics if broken else []}})  # fmt: skip


def flood() -> None:
    chunk = b"x" * 65535 + b"\n"
    for _ in range(4096):
        os.write(2, chunk)


def main() -> None:
    mode = sys.argv[1]
    if len(sys.argv) > 2:
        with open(sys.argv[2], "a") as marks:
            marks.write(f"{mode} {os.getpid()}\n")
    if mode == "flood-stderr":
        threading.Thread(target=flood, daemon=True).start()
    stdin = sys.stdin.buffer
    docs: dict[str, tuple[int, str]] = {}  # uri -> (version, text)
    while True:
        message = read_message(stdin)
        if message is None:
            return
        if mode == "silent":
            continue
        method = message.get("method")
        if method == "initialize":
            if mode == "huge":
                sys.stdout.buffer.write(b"Content-Length: 2000000000\r\n\r\n{")
                sys.stdout.buffer.flush()
                continue
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {
                "textDocumentSync": 1, "definitionProvider": True}, "serverInfo": {"name": "fake"}}})  # fmt: skip
        elif method == "initialized":
            if mode == "crash":
                sys.exit(3)
            if mode == "spam":
                while True:
                    send({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": "x" * 200}})
        elif method == "textDocument/didOpen":
            doc = message["params"]["textDocument"]
            docs[doc["uri"]] = (doc["version"], doc["text"])
            publish(doc["uri"], doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            params = message["params"]
            document = params["textDocument"]
            later = (document["uri"], document["version"], params["contentChanges"][-1]["text"])
            docs[later[0]] = (later[1], later[2])
            if mode == "slow-changes":
                threading.Timer(8.0, publish, later).start()
            else:
                publish(*later)
            if mode == "dependents":
                threading.Timer(0.3, republish_others, (later[0], dict(docs))).start()
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})


if __name__ == "__main__":
    main()
