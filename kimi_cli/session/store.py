"""SessionStore: one folder per session with meta.json and an append-only context.jsonl."""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.jsonsafe import dumps
from kimi_cli.llm.types import Message
from kimi_cli.paths import PRIVATE_DIR, make_private_dir, open_private, sessions_dir, write_private
from kimi_cli.session.history import repair_history

LOG_NAME = "context.jsonl"
META_NAME = "meta.json"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


@dataclass
class SessionInfo:
    id: str
    path: Path
    title: str
    updated: float
    status: str
    steps: int


class Session:
    """An open session: appends records and flushes them; fsyncs at each step's end."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.meta = meta
        self._log = open_private(path / LOG_NAME, "a")  # 0600: it holds the user's code and prompts

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @classmethod
    def create(cls, workspace: Path, title: str, model: str) -> Session:
        sid = new_session_id()
        path = sessions_dir(workspace) / sid
        make_private_dir(path.parent)
        path.mkdir(mode=PRIVATE_DIR, exist_ok=False)
        meta = {
            "id": sid,
            "workspace": str(workspace.resolve()),
            "title": title[:200],
            "model": model,
            "created": time.time(),
            "updated": time.time(),
            "status": "running",
            "steps": 0,
        }
        session = cls(path, meta)
        session.save_meta()
        return session

    @classmethod
    def open(cls, workspace: Path, session_id: str) -> Session:
        path = sessions_dir(workspace) / session_id
        if not (path / META_NAME).is_file():
            raise ConfigError(f"no session {session_id!r} for this workspace; `kimi sessions` lists them")
        meta = json.loads((path / META_NAME).read_text())
        return cls(path, meta)

    @classmethod
    def latest(cls, workspace: Path) -> Session:
        infos = list_sessions(workspace)
        if not infos:
            raise ConfigError("no earlier session in this workspace to continue; start one with `kimi -p TASK`")
        return cls.open(workspace, infos[0].id)

    def append(self, record: dict[str, Any]) -> None:
        self._log.write(dumps(record) + "\n")  # any string, lone surrogates included, is logged exactly
        self._log.flush()

    def append_message(self, message: Message) -> None:
        self.append({"kind": "message", "message": message})

    def append_event(self, event: dict[str, Any]) -> None:
        self.append({"kind": "event", "event": event})

    def replace_history(self, messages: list[Message], reason: str) -> None:
        """A new conversation from here on (compaction); earlier records stay in the log."""
        self.append({"kind": "truncate", "keep": 0, "reason": reason})
        for message in messages:
            self.append_message(message)

    def end_step(self, steps: int) -> None:
        os.fsync(self._log.fileno())
        self.meta["steps"] = steps
        self.save_meta()

    def save_meta(self) -> None:
        self.meta["updated"] = time.time()
        write_private(self.path / META_NAME, dumps(self.meta, indent=1))

    def set_status(self, status: str) -> None:
        self.meta["status"] = status
        self.save_meta()

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.path / LOG_NAME)

    def raw_messages(self) -> list[Message]:
        """The conversation as logged, with undo cuts applied (the log itself keeps everything)."""
        messages: list[Message] = []
        for rec in self.records():
            if rec.get("kind") == "message":
                messages.append(rec["message"])
            elif rec.get("kind") == "truncate":
                del messages[int(rec["keep"]) :]
        return messages

    def messages(self) -> list[Message]:
        """The conversation, repaired so it can be sent again; a repair is logged so indexes stay aligned."""
        raw = self.raw_messages()
        repaired = repair_history(raw)
        if repaired != raw:
            self.append({"kind": "truncate", "keep": 0, "reason": "repair"})
            for message in repaired:
                self.append_message(message)
        return repaired

    def close(self) -> None:
        self._log.close()


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL log; a torn or corrupt line (a crash mid-write) is skipped, not fatal."""
    records: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return records
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records


def list_sessions(workspace: Path) -> list[SessionInfo]:
    """This workspace's sessions, newest first."""
    base = sessions_dir(workspace)
    infos: list[SessionInfo] = []
    if not base.is_dir():
        return infos
    for child in base.iterdir():
        try:
            meta = json.loads((child / META_NAME).read_text())
        except (OSError, ValueError):
            continue
        infos.append(
            SessionInfo(
                id=str(meta.get("id", child.name)),
                path=child,
                title=str(meta.get("title", "")),
                updated=float(meta.get("updated", 0)),
                status=str(meta.get("status", "?")),
                steps=int(meta.get("steps", 0)),
            )
        )
    infos.sort(key=lambda i: (i.updated, i.id), reverse=True)
    return infos
