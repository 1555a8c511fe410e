"""SessionStore: one folder per session with meta.json and an append-only context.jsonl.

meta.json carries what `kimi sessions` and a resumed session show without reading the log: the whole
session's step count and token usage (every run of it, subagents included), its status, and the pid of
the process running it (a `running` session whose process is gone is listed as `interrupted`).

Work that need not hold up the next request runs on the session's own worker thread, in order (`defer`): the
fsync of the log and the rewrite of meta.json at a step's end, and a checkpoint's "after" snapshot. Every
record but an event waits for those jobs before it is written (`settle`), so the log keeps its order, and a
step's tool calls are logged (and its tools run) only once the step before is on disk: a crash still loses
the records of at most one step whose tools ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.hostsafe.fs import write_private
from kimi_cli.llm.types import Message
from kimi_cli.session.history import repair_history
from kimi_cli.util.jsonsafe import dumps
from kimi_cli.util.paths import PRIVATE_DIR, make_private_dir, open_private, sessions_dir
from kimi_cli.util.signals import alive

LOG_NAME = "context.jsonl"
META_NAME = "meta.json"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens")


@dataclass
class SessionInfo:
    id: str
    path: Path
    title: str
    updated: float
    status: str
    steps: int
    tokens: int = 0  # input + output over the whole session
    prompts: int = 0  # prompts the user sent (0: opened and left)


class Session:
    """An open session: appends records and flushes them; fsyncs at each step's end (on its worker thread)."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.meta = meta
        self._log = open_private(path / LOG_NAME, "a")  # 0600: it holds the user's code and prompts
        self._running_here = False  # this process marked it running (create, mark_running)
        self._lock = threading.RLock()  # appends come from the loop and from deferred jobs
        self._worker: ThreadPoolExecutor | None = None
        self._last_job: Future[None] | None = None
        self._job_thread: int | None = None

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
            "prompts": 0,
            "usage": dict.fromkeys(USAGE_KEYS, 0),
            "pid": os.getpid(),
        }
        session = cls(path, meta)
        session._running_here = True
        session.save_meta()
        return session

    def mark_running(self) -> None:
        """This process runs the session now (a resume): listed as running until close()."""
        self.meta["status"], self.meta["pid"] = "running", os.getpid()
        self._running_here = True
        self.save_meta()

    @classmethod
    def open(cls, workspace: Path, session_id: str) -> Session:
        """The session with this id, or with the only id starting with it (`kimi -r 2026112`)."""
        session_id = resolve_id(workspace, session_id)
        path = sessions_dir(workspace) / session_id
        meta = read_meta(path)
        if meta is None:
            raise ConfigError(f"cannot read session {session_id}: its {META_NAME} is missing or not a JSON object")
        if not isinstance(meta.get("usage"), dict):  # a session from before usage was kept in meta
            meta["usage"] = usage_from_records(read_records(path / LOG_NAME))
        return cls(path, meta)

    @classmethod
    def latest(cls, workspace: Path) -> Session:
        infos = list_sessions(workspace)
        if not infos:
            raise ConfigError("no earlier session in this workspace; start one with `kimi` or `kimi -p TASK`")
        return cls.open(workspace, infos[0].id)

    def append(self, record: dict[str, Any]) -> None:
        if record.get("kind") != "event":  # messages, turns, cuts, checkpoints: after the deferred jobs
            self.settle()
        line = dumps(record) + "\n"  # any string, lone surrogates included, is logged exactly
        with self._lock:
            self._log.write(line)
            self._log.flush()
            _count_usage(self.meta, record)
        if record.get("kind") == "turn":  # a prompt: the session is worth listing from now on
            self.meta["prompts"] = int(self.meta.get("prompts", 0)) + 1
            self.save_meta()

    def defer(self, job: Callable[[], None]) -> None:
        """Run `job` on this session's worker thread, after the jobs deferred before it. A job may append
        records (they are written at once); it must not wait for other jobs."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="kimi-session")

        def run() -> None:
            self._job_thread = threading.get_ident()
            job()

        self._last_job = self._worker.submit(run)

    def settle(self) -> None:
        """Wait until every deferred job is done (a job's own error is raised here). A no-op inside a job."""
        job = self._last_job
        if job is None or threading.get_ident() == self._job_thread:
            return
        job.result()

    @property
    def pending(self) -> Future[None] | None:
        """The last deferred job, while it runs (an async caller may await it with asyncio.wrap_future)."""
        job = self._last_job
        return job if job is not None and not job.done() else None

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
        """One more step of the session (`steps` is the run's own count; meta keeps the session's). The log's
        fsync and meta.json are written on the worker thread, while the next request goes out."""
        with self._lock:
            self.meta["steps"] = int(self.meta.get("steps", 0)) + 1
            self.meta["updated"] = time.time()
            text = dumps(self.meta, indent=1)
        self.defer(lambda: self._sync(text))

    def _sync(self, meta_text: str) -> None:
        os.fsync(self._log.fileno())
        write_private(self.path / META_NAME, meta_text)

    @property
    def usage(self) -> dict[str, int]:
        """Tokens over the whole session: input, cached input, output, and the last request's size."""
        return dict(self.meta.get("usage") or {})

    @property
    def prompts(self) -> int:
        return int(self.meta.get("prompts", 0))

    def save_meta(self) -> None:
        self.settle()  # a deferred rewrite of meta.json lands first, never after this one
        with self._lock:
            self.meta["updated"] = time.time()
            text = dumps(self.meta, indent=1)
        write_private(self.path / META_NAME, text)

    def set_status(self, status: str) -> None:
        self.meta["status"] = status
        self.save_meta()

    def records(self) -> list[dict[str, Any]]:
        self.settle()  # a deferred checkpoint's record is part of what was asked
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

    def close(self, status: str | None = None) -> None:
        """Close the log; `status` (idle, done, ...) replaces `running` in meta, so the listing is right."""
        if self._log.closed:
            return
        try:
            with contextlib.suppress(OSError):  # the last fsync failed: the log is closed all the same
                self.settle()
        finally:
            if self._worker is not None:
                self._worker.shutdown(wait=True)
                self._worker = None
        if status is not None or (self._running_here and self.meta.get("status") == "running"):
            self.meta["status"] = status or "idle"
            self.meta.pop("pid", None)
            with contextlib.suppress(OSError):
                self.save_meta()
        self._log.close()

    def discard_if_empty(self) -> bool:
        """An interactive session opened and left without a prompt: its folder is removed (it holds only the
        system message). True when removed."""
        if self.prompts or any(r.get("kind") in ("turn", "checkpoint") for r in self.records()):
            return False
        import shutil

        self._log.close()
        shutil.rmtree(self.path, ignore_errors=True)
        return True


def _count_usage(meta: dict[str, Any], record: dict[str, Any]) -> None:
    """Add a usage event's tokens (the session's own steps and its subagents') to meta["usage"]."""
    event = record.get("event")
    if not isinstance(event, dict) or event.get("type") != "usage" or not isinstance(event.get("usage"), dict):
        return
    usage = meta.setdefault("usage", dict.fromkeys(USAGE_KEYS, 0))
    step = event["usage"]
    for key in USAGE_KEYS:
        usage[key] = int(usage.get(key, 0)) + int(step.get(key, 0) or 0)
    if record.get("kind") == "event":  # the session's own request: how full the window was
        usage["last_context"] = int(step.get("prompt_tokens", 0) or 0) + int(step.get("completion_tokens", 0) or 0)


def usage_from_records(records: list[dict[str, Any]]) -> dict[str, int]:
    """Usage summed from a log (sessions written before meta kept it)."""
    meta: dict[str, Any] = {"usage": dict.fromkeys(USAGE_KEYS, 0)}
    for record in records:
        _count_usage(meta, record)
    return dict(meta["usage"])


def resolve_id(workspace: Path, wanted: str) -> str:
    """A full session id, from itself or from a prefix only one session here starts with."""
    base = sessions_dir(workspace)
    if wanted and "/" not in wanted and (base / wanted / META_NAME).is_file():
        return wanted
    matches = [i.id for i in list_sessions(workspace) if wanted and i.id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ConfigError(f"no session {wanted!r} for this workspace; `kimi sessions` lists them")
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise ConfigError(f"{len(matches)} sessions start with {wanted!r} ({shown}); give more of the id")


def read_log(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The records of a JSONL log, and how many lines could not be read. A torn line (a crash mid-write), a
    corrupt one or one nested past the decoder's stack is skipped, not fatal."""
    records: list[dict[str, Any]] = []
    skipped = 0
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return records, skipped
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            skipped += 1
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            skipped += 1
    return records, skipped


def read_records(path: Path) -> list[dict[str, Any]]:
    """A JSONL log's readable records (read_log without the count)."""
    return read_log(path)[0]


def read_meta(folder: Path) -> dict[str, Any] | None:
    """A session folder's meta.json, or None where it is missing, unreadable or not a JSON object."""
    try:
        meta = json.loads((folder / META_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None


def list_sessions(workspace: Path) -> list[SessionInfo]:
    """This workspace's sessions, newest first. A `running` session whose process is gone (killed, crashed)
    is `interrupted`; one that never got a prompt is not listed."""
    base = sessions_dir(workspace)
    infos: list[SessionInfo] = []
    if not base.is_dir():
        return infos
    for child in base.iterdir():
        meta = read_meta(child)
        if meta is None:
            continue
        status = str(meta.get("status", "?"))
        if status == "running" and not alive(meta.get("pid")):
            status = "interrupted"
        raw_usage = meta.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        prompts = int(meta.get("prompts", 1 if meta.get("title") not in ("", "interactive") else 0))
        if not prompts and status != "running" and not int(meta.get("steps", 0)):
            continue  # opened and left without a prompt
        infos.append(
            SessionInfo(
                id=str(meta.get("id", child.name)),
                path=child,
                title=str(meta.get("title", "")),
                updated=float(meta.get("updated", 0)),
                status=status,
                steps=int(meta.get("steps", 0)),
                tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
                prompts=prompts,
            )
        )
    infos.sort(key=lambda i: (i.updated, i.id), reverse=True)
    return infos
