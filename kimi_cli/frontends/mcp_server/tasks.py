"""What the `kimi` and `kimi_reply` tools do: one headless run (kimi_cli.frontends.headless.stream, the same
run as `kimi -p`), its progress told to the client, its approvals asked through MCP elicitation where the
client can answer and refused otherwise, and the files it changed.

Trust: the MCP client cannot grant it. A workspace's widening settings apply only where the user trusted the
folder (`kimi trust`), exactly as for `kimi -p` without --trust. Workspaces: a task's cwd must lie under one of
the roots the server was started with (its own folder by default), so a client cannot aim kimi anywhere.
Tasks in one workspace run one at a time; tasks in different workspaces run concurrently.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.frontends.headless.app import RunOptions
from kimi_cli.frontends.headless.stream import ApprovalRequest, stream_run

MAX_FILES = 50_000  # a workspace bigger than this reports the files changed among the first this many
Progress = Callable[[float, str], Awaitable[None]]


@dataclass
class TaskArgs:
    prompt: str
    cwd: str | None = None
    model: str | None = None
    effort: str | None = None
    sandbox: str | None = None
    max_steps: int | None = None
    output_schema: dict[str, Any] | None = None
    session_id: str | None = None  # kimi_reply: the session to continue


@dataclass
class TaskRunner:
    """The server's tasks: where they may run, and one lock per workspace."""

    roots: list[Path]
    locks: dict[Path, asyncio.Lock] = field(default_factory=dict)

    def workspace(self, cwd: str | None) -> Path:
        """The task's folder, resolved, under one of the roots (KimiError, usage, otherwise)."""
        folder = Path(cwd).expanduser() if cwd else self.roots[0]
        if not folder.is_absolute():
            folder = self.roots[0] / folder
        folder = folder.resolve()
        if not folder.is_dir():
            raise KimiError(f"cwd {folder} is not a directory", ExitCode.USAGE)
        if not any(folder == root or folder.is_relative_to(root) for root in self.roots):
            shown = ", ".join(str(r) for r in self.roots)
            raise KimiError(f"cwd {folder} is outside the folders this server serves ({shown}): start "
                            "`kimi mcp serve --root DIR` to serve it", ExitCode.USAGE)  # fmt: skip
        return folder

    async def run(
        self, args: TaskArgs, progress: Progress, approve: Callable[[ApprovalRequest], Awaitable[str]] | None
    ) -> dict[str, Any]:
        folder = self.workspace(args.cwd)
        if args.effort is not None and args.effort not in ("low", "high", "max"):
            raise KimiError(f"effort must be low, high or max, not {args.effort!r}", ExitCode.USAGE)
        flags: dict[str, Any] = {"model": args.model, "effort": args.effort, "max_steps": args.max_steps}
        if args.sandbox:
            flags["sandbox"] = {"mode": args.sandbox}
        schema_file = _schema_file(args.output_schema) if args.output_schema is not None else None
        opts = RunOptions(prompt=args.prompt, workdir=folder, output_format="stream-json", resume_id=args.session_id,
                          config_flags={k: v for k, v in flags.items() if v is not None},
                          output_schema=schema_file)  # fmt: skip
        lock = self.locks.setdefault(folder, asyncio.Lock())
        try:
            async with lock:
                before = await asyncio.to_thread(_stat_tree, folder)
                result = await _drive(opts, progress, approve)
                after = await asyncio.to_thread(_stat_tree, folder)
        finally:
            if schema_file is not None:
                os.unlink(schema_file)
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        cost = result.get("cost") or {}
        return {
            "answer": result.get("text", ""),
            "files_changed": changed,
            "cost_usd": cost.get("total_usd") if cost.get("priced") else None,
            "session_id": result.get("session_id"),
            "reason": result.get("reason"),
            "is_error": bool(result.get("is_error")),
            "message": result.get("message", ""),
            "steps": result.get("steps", 0),
            "usage": result.get("usage"),
            "structured_output": result.get("structured_output"),
            "cwd": str(folder),
        }


async def _drive(opts: RunOptions, progress: Progress, approve: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    step = 0
    async for obj in stream_run(opts, approve):
        kind = obj.get("type")
        if kind == "step_begin":
            step = int(obj.get("step", step))
            await progress(step, f"step {step}")
        elif kind == "tool_call":
            await progress(step, f"step {step}: {obj.get('name')} {str(obj.get('arguments', ''))[:200]}")
        elif kind in ("notice", "error"):
            await progress(step, str(obj.get("message", ""))[:500])
        elif kind == "result":
            result = obj
    return result


def _schema_file(schema: dict[str, Any]) -> str:
    """--output-schema takes a file: the client's schema written to a private one (removed after the run)."""
    fd, path = tempfile.mkstemp(prefix="kimi-mcp-schema-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(schema, out)
    return path


def _stat_tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """Each file's (mode, size, mtime) under root, links not followed, .git left out: what a run changed is
    the difference of two of these (a report for the client, not a security check)."""
    from kimi_cli.hostsafe.walk import list_tree

    out: dict[str, tuple[int, int, int]] = {}
    for rel in list_tree(root, skip_dirs=frozenset({".git"}))[:MAX_FILES]:
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue
        out[rel] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out
