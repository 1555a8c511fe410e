"""Server-sent events, decoded incrementally as the HTML standard describes them, and turned into chunks.

Lines end in CRLF, LF or CR (a CRLF split across two reads is one line end). `data:` lines of one event are
joined with "\\n"; a blank line dispatches the event; lines starting with ":" are comments; `event:`, `id:`
and `retry:` are read (a bad `retry:` is ignored) and never mistaken for data. One leniency beyond the
standard: a final event the server did not close with a blank line is still delivered, since some
OpenAI-compatible servers end their stream that way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kimi_cli.llm.failures import HTTPFailure, StreamIncomplete
from kimi_cli.util import jsonsafe

_LINE_END = re.compile(r"\r\n|\r|\n")
_ANY_END = re.compile(r"[\r\n]")
# A line, or an event's data, longer than this is a server gone wrong (a chunk is a delta of a few hundred
# characters; a whole answer's arguments stay far below): the stream is refused, not held in memory.
MAX_EVENT_CHARS = 32 * 1024 * 1024


@dataclass(frozen=True)
class ServerSentEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed text as it arrives, get back the events it completes; `close()` flushes the last one."""

    def __init__(self) -> None:
        self._tail: list[str] = []  # the pieces of an unfinished line (joined once its end arrives)
        self._tail_chars = 0
        self._data_chars = 0
        self._skip_lf = False  # the last read ended in CR: a leading LF in the next one ends nothing
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self.last_id: str | None = None
        self.retry: int | None = None

    def feed(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = text.endswith("\r")
        if not _ANY_END.search(text):  # no line ends here: keep the piece, never rescan what came before
            self._tail.append(text)
            self._tail_chars += len(text)
            if self._tail_chars > MAX_EVENT_CHARS:
                raise StreamIncomplete(f"a server-sent line is longer than {MAX_EVENT_CHARS} characters")
            return []
        lines = _LINE_END.split("".join(self._tail) + text)
        last = lines.pop()
        self._tail, self._tail_chars = ([last], len(last)) if last else ([], 0)
        events = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """The stream ended: an unfinished line and an undispatched event still count."""
        events = []
        if self._tail:
            self._line("".join(self._tail))
            self._tail, self._tail_chars = [], 0
        last = self._dispatch()
        if last is not None:
            events.append(last)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_chars += len(value) + 1
            if self._data_chars > MAX_EVENT_CHARS:
                raise StreamIncomplete(f"a server-sent event is longer than {MAX_EVENT_CHARS} characters")
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = ServerSentEvent("\n".join(self._data), self._event or "message", self.last_id, self.retry)
        self._data, self._data_chars = [], 0
        self._event = ""
        return event


def chunk_from_event(event: ServerSentEvent) -> dict[str, Any] | None:
    """An event's data as a chat-completion chunk; None for an empty event or [DONE]. Errors raise: an
    `error` key without choices, or an event named `error`, is the server failing mid-stream."""
    payload = event.data.strip()
    if not payload or payload == "[DONE]":
        return None
    try:
        chunk = jsonsafe.loads(payload)
    except ValueError as exc:
        if event.event == "error":
            raise HTTPFailure(500, payload[:2000]) from None
        raise StreamIncomplete(f"a chunk is not JSON: {payload[:200]!r}") from exc
    if not isinstance(chunk, dict):
        raise StreamIncomplete(f"a chunk is not a JSON object: {payload[:200]!r}")
    if event.event == "error" or ("error" in chunk and not chunk.get("choices")):
        err = chunk.get("error", chunk)
        message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        code = err.get("code") if isinstance(err, dict) else None
        raise HTTPFailure(code if isinstance(code, int) and code >= 400 else 500, str(message))
    return chunk
