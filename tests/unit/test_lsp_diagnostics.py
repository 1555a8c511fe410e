"""What an edit introduced or fixed, as the model reads it (kimi_cli.extensions.lsp.diagnostics), and the JSON-RPC
reader's bounds (kimi_cli.extensions.lsp.rpc) against streams a hostile server could send."""

from __future__ import annotations

import asyncio
import json

import pytest

from kimi_cli.extensions.lsp.diagnostics import (
    Diag,
    column_to_utf16,
    delta,
    edit_report,
    from_tsserver,
    one_line,
    utf16_to_column,
)
from kimi_cli.extensions.lsp.rpc import MAX_BODY, Connection, ConnectionLost


def diag(line: int, message: str = "x is not defined", severity: str = "error", code: str = "E1") -> Diag:
    return Diag("app.py", line, 1, severity, code, message, "test")


def test_an_error_moved_by_an_edit_above_it_is_neither_new_nor_fixed() -> None:
    before = [diag(3), diag(9, "y is not defined")]
    after = [diag(4), diag(10, "y is not defined"), diag(2, "z is not defined")]
    introduced, fixed = delta(before, after)
    assert [d.message for d in introduced] == ["z is not defined"] and fixed == []


def test_equal_diagnostics_are_counted() -> None:
    introduced, fixed = delta([diag(1)], [diag(1), diag(5)])
    assert len(introduced) == 1 and not fixed
    introduced, fixed = delta([diag(1), diag(5)], [diag(1)])
    assert not introduced and len(fixed) == 1


def test_a_clean_edit_reports_nothing() -> None:
    assert edit_report([], [], 20) == []
    assert edit_report(*delta([diag(1)], [diag(2)]), 20) == []


def test_the_report_names_severity_file_line_code_and_message_and_is_bounded() -> None:
    lines = edit_report([diag(n) for n in range(1, 51)], [diag(99, "old")], 10)
    assert lines[0] == "[diagnostics] 50 new, 1 fixed after this edit"
    assert lines[1] == "error app.py:1:1 [E1] x is not defined"
    assert len(lines) == 12 and lines[-1] == "... 41 more (the Diagnostics tool lists them all)"


def test_errors_come_before_warnings_and_fixes_last() -> None:
    lines = edit_report([diag(1, "w", "warning"), diag(2, "e")], [diag(3, "f")], 20)
    assert [line.split()[0] for line in lines[1:]] == ["error", "warning", "fixed:"]


def test_a_server_message_becomes_one_bounded_line_without_controls() -> None:
    text = one_line("first\n  second\x1b[31m red\x07\n" + "y" * 1000)
    assert "\n" not in text and "\x1b" not in text and "\x07" not in text
    assert text.startswith("first / second[31m red / ") and len(text) == 300


def test_utf16_columns_count_characters_outside_the_basic_plane() -> None:
    line = "x = '😀😀' + y"
    units = len("x = '😀😀' + ".encode("utf-16-le")) // 2
    assert utf16_to_column(line, units) == line.index("y") + 1
    assert column_to_utf16(line, line.index("y") + 1) == units
    assert utf16_to_column("plain", 3) == 4


def test_tsserver_diagnostics_are_read_and_bad_items_skipped() -> None:
    body = [
        {
            "start": {"line": 4, "offset": 17},
            "text": "Type 'string' is not assignable",
            "code": 2345,
            "category": "error",
        },
        {"start": {"line": "4"}, "text": "not a position"},
        "not an object",
        {"start": {"line": 1, "offset": 1}, "text": "unused", "code": 6133, "category": "suggestion"},
    ]
    found = from_tsserver(body, "app.ts")
    assert [d.text() for d in found] == ["error app.ts:4:17 [TS2345] Type 'string' is not assignable",
                                         "hint app.ts:1:1 [TS6133] unused"]  # fmt: skip
    assert from_tsserver({"not": "a list"}, "app.ts") == []


# --- the JSON-RPC reader ------------------------------------------------------------------------------------


class Sink:
    """A writer that keeps what is written (the requests kimi sends)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


def served(stream: bytes) -> Connection:
    async def go() -> Connection:
        reader = asyncio.StreamReader(limit=64 * 1024)
        reader.feed_data(stream)
        reader.feed_eof()
        conn = Connection(reader, Sink(), lambda m, p: None, lambda m, p: None)  # type: ignore[arg-type]
        await asyncio.wait_for(conn.serve(), 5)
        return conn

    return asyncio.run(go())


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        (b"Content-Length: 99999999999\r\n\r\n{", "byte message"),
        (b"X-Junk: " + b"a" * 100_000, "header"),
        (frame(b"[" * 100 + b"]" * 100), "not JSON"),
        (frame(b"not json"), "not JSON"),
        (frame(b"[1, 2]"), "not a JSON object"),
        (b"Content-Length: ten\r\n\r\n", "not a number"),
        (b"Content-Type: x\r\n\r\n{}", "without a Content-Length"),
    ],
)
def test_a_stream_that_breaks_the_protocol_ends_the_connection(stream: bytes, why: str) -> None:
    conn = served(stream)
    assert conn.closed and why in conn.closed, conn.closed


def test_messages_past_the_flood_bound_end_the_connection() -> None:
    note = frame(json.dumps({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"m": "x" * 60_000}}).encode())
    conn = served(note * (70 * 1024 * 1024 // len(note)))
    assert "messages within" in conn.closed


def test_a_request_times_out_and_a_closed_connection_fails_the_waiters() -> None:
    async def go() -> None:
        reader = asyncio.StreamReader()
        sink = Sink()
        conn = Connection(reader, sink, lambda m, p: None, lambda m, p: None)  # type: ignore[arg-type]
        serving = asyncio.ensure_future(conn.serve())
        with pytest.raises(TimeoutError):
            await conn.request("initialize", {}, 0.05)
        assert b'"$/cancelRequest"' in sink.data
        waiting = asyncio.ensure_future(conn.request("shutdown", None, 5))
        await asyncio.sleep(0.01)
        reader.feed_eof()
        with pytest.raises(ConnectionLost):
            await waiting
        await serving

    asyncio.run(go())


def test_a_server_request_to_edit_files_is_refused_and_an_unknown_one_answered_with_an_error() -> None:
    async def go() -> bytes:
        reader = asyncio.StreamReader()
        sink = Sink()

        def answer(method: str, params: object) -> object:
            if method == "workspace/applyEdit":
                return {"applied": False}
            raise LookupError(method)

        conn = Connection(reader, sink, lambda m, p: None, answer)  # type: ignore[arg-type]
        reader.feed_data(frame(b'{"jsonrpc":"2.0","id":7,"method":"workspace/applyEdit","params":{}}'))
        reader.feed_data(frame(b'{"jsonrpc":"2.0","id":8,"method":"kimi/secret","params":{}}'))
        reader.feed_eof()
        await conn.serve()
        return bytes(sink.data)

    sent = asyncio.run(go())
    assert b'"id":7,"result":{"applied":false}' in sent
    assert b'"id":8,"error":{"code":-32601' in sent
    assert MAX_BODY < 64 * 1024 * 1024
