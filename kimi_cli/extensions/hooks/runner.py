"""Spawning hooks: the smallest useful runner. It starts the command on the host in the workspace, writes
the event's JSON on stdin, and reads the exit code, stdout and stderr, within the hook's timeout.

Several matching hooks run at once (threads: each waits on its own process). A hook that times out has its
whole process group killed; one that cannot start is reported like one that failed. Nothing here raises:
a broken hook is a result, never the end of the session. A cancelled turn kills the hooks it started.

Output is read as it comes, never all at once: each stream keeps its first OUTPUT_CAP bytes and the rest is
read and dropped (a hook that `cat`s a 2 GB file costs a pipe buffer, not 2 GB), until the hook exits or its
timeout kills it; the kept text then says where it was cut and how much there was. A hook that exits while
something it left in the background still holds its pipes gets EXIT_GRACE more to finish its output; then
that group is killed and the hook's own exit code is its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.extensions.hooks.config import Hook
from kimi_cli.hostsafe import pins

OUTPUT_CAP = 64 * 1024  # of each stream, kept for the model or the user


@dataclass
class HookRun:
    """What one hook did. exit_code None: it never finished (timed out, could not start, was refused)."""

    hook: Hook
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""  # why it did not run or finish, in words for the user
    tampered: bool = False  # a workspace script it names changed since the session started

    @property
    def failed(self) -> bool:
        """Neither success (0) nor a deliberate block (2)."""
        return self.exit_code not in (0, 2)

    def problem(self) -> str:
        """One line for the user about a failed hook."""
        if self.error:
            return self.error
        detail = " ".join(self.stderr.split())[:300]
        return f"exit code {self.exit_code}" + (f": {detail}" if detail else "")


def _encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8", errors="surrogateescape")


KILL_GRACE = 5.0  # seconds to read what is left once a hook's group is killed
# Seconds to read what is left once the hook itself has exited. A child it left in the background (`cmd &`)
# holds the pipes open: waiting for their end held the hook's answer (an exit 2 that blocks) until the
# timeout, which then dropped it as "timed out" (a hook that fails open let the call run).
EXIT_GRACE = 0.5
READ_SIZE = 65536
POLL = 0.05  # seconds between looks at whether the hook has exited, while its pipes stay open


class _Capped:
    """One stream's first OUTPUT_CAP bytes, and how many it sent in all."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = OUTPUT_CAP - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.total <= OUTPUT_CAP:
            return text
        cut = f"output cut at {OUTPUT_CAP // 1024} KB: the hook wrote {self.total:,} bytes, the rest was dropped"
        return f"{text}\n[... {cut}]"


class _Spawn:
    """One hook's process, killable from another thread (a cancelled turn)."""

    def __init__(self, hook: Hook, stdin: bytes, cwd: Path, env: dict[str, str]) -> None:
        self.hook = hook
        self.stdin = stdin
        self.cwd = cwd
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def run(self) -> HookRun:
        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", self.hook.command], cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            return HookRun(self.hook, None, error=f"could not start: {exc.strerror or exc}")
        out, err = _Capped(), _Capped()
        try:
            finished = self._exchange(out, err, time.monotonic() + self.hook.timeout)
        except (OSError, ValueError) as exc:
            self.kill()
            return HookRun(self.hook, None, error=f"failed: {exc}")
        if not finished:
            self.kill()
            with contextlib.suppress(OSError, ValueError):
                self._exchange(out, err, time.monotonic() + KILL_GRACE)
            return HookRun(self.hook, None, out.text(), err.text(), timed_out=True,
                           error=f"timed out after {self.hook.timeout:g} s (killed)")  # fmt: skip
        code = self.proc.returncode
        if code < 0:
            return HookRun(self.hook, None, out.text(), err.text(), error=f"killed by signal {-code}")
        return HookRun(self.hook, code, out.text(), err.text())

    def _exchange(self, out: _Capped, err: _Capped, deadline: float) -> bool:
        """Write stdin and read stdout and stderr as they come, until both close and the hook exits; False
        when the deadline passes first."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        pending = memoryview(self.stdin)
        with selectors.DefaultSelector() as selector:
            for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
                if not stream.closed:
                    os.set_blocking(stream.fileno(), False)
                    selector.register(stream, selectors.EVENT_READ, (sink, stream))
            if not proc.stdin.closed:
                if pending:
                    os.set_blocking(proc.stdin.fileno(), False)
                    selector.register(proc.stdin, selectors.EVENT_WRITE)
                else:
                    proc.stdin.close()
            exited: float | None = None  # when the hook itself ended, its pipes maybe still open
            while selector.get_map():
                now = time.monotonic()
                left = deadline - now
                if exited is None and proc.poll() is not None:
                    exited = now
                if exited is not None and now - exited >= EXIT_GRACE:
                    self.kill()  # what it left in the background, holding the pipes: its group is the hook's
                    for key in list(selector.get_map().values()):
                        selector.unregister(key.fileobj)
                        key.fileobj.close()  # type: ignore[union-attr]
                    break
                if left <= 0:
                    return False
                wait = min(left, POLL if exited is None else EXIT_GRACE - (now - exited))
                for key, _events in selector.select(wait):
                    if key.fileobj is proc.stdin:
                        pending = self._write(pending)
                        if not pending:
                            selector.unregister(proc.stdin)
                            proc.stdin.close()
                        continue
                    sink, stream = key.data
                    with contextlib.suppress(BlockingIOError):
                        data = os.read(key.fd, READ_SIZE)
                        if data:
                            sink.add(data)  # past the cap only counted: read and dropped
                        else:
                            selector.unregister(stream)
                            stream.close()
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        return True

    def _write(self, pending: memoryview) -> memoryview:
        """Write what fits of the hook's stdin; a hook that closed it reads no more (not an error)."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            return pending[os.write(self.proc.stdin.fileno(), pending[:READ_SIZE]) :]
        except BlockingIOError:
            return pending
        except BrokenPipeError:
            return pending[:0]

    def kill(self) -> None:
        """Kill the hook's process group, the hook and whatever it left running (also once the hook exited:
        its group lives on while a member does)."""
        if self.proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class HookRunner:
    """Runs hooks for one workspace; knows the pinned scripts (kimi_cli.hostsafe.pins)."""

    def __init__(
        self,
        workdir: Path,
        hooks: Sequence[Hook],
        extra_env: dict[str, str] | None = None,
        pinned: dict[Hook, dict[str, str]] | None = None,
    ) -> None:
        self.workdir = workdir.resolve()
        self.hooks = list(hooks)
        self.extra_env = dict(extra_env or {})
        known = pinned or {}  # the pins taken when the hooks were read (and checked against trust)
        self.pins = {
            hook: known[hook] if hook in known else pins.pin(hook.command, self.workdir) for hook in self.hooks
        }

    def matching(self, event: str, tool_name: str | None = None) -> list[Hook]:
        return [h for h in self.hooks if h.event == event and h.matches(tool_name)]

    def _env(self) -> dict[str, str]:
        """The user's environment, with two changes: PATH without the folders a sandboxed command may write
        (a project's activated `.venv/bin` comes first on it, and a command could plant `python3` there for
        the next hook to run on the host), and without kimi's own API keys (no hook needs them)."""
        from kimi_cli.hostsafe.programs import trusted_path
        from kimi_cli.hostsafe.secrets import without_keys  # every provider's key variables

        env = without_keys(os.environ)
        env["PATH"] = trusted_path(env.get("PATH", os.defpath), (self.workdir,))
        env.update({"CLAUDE_PROJECT_DIR": str(self.workdir), "KIMI_PROJECT_DIR": str(self.workdir)})
        env.update(self.extra_env)
        return env

    def _spawns(self, hooks: list[Hook], payload: dict[str, Any]) -> tuple[list[_Spawn], dict[Hook, HookRun]]:
        stdin = {"kimi": _encode(payload)}
        if any(hook.dialect == "claude" for hook in hooks):
            from kimi_cli.extensions.hooks.claude import claude_event

            stdin["claude"] = _encode(claude_event(payload, self.workdir))
        env = self._env()
        refused: dict[Hook, HookRun] = {}
        spawns = []
        for hook in hooks:
            changed = pins.changed(self.pins.get(hook, {}), self.workdir)
            if changed:
                why = f"not run: {', '.join(changed)} changed since the session started (a hook runs on the host)"
                refused[hook] = HookRun(hook, None, error=why, tampered=True)
            else:
                spawns.append(_Spawn(hook, stdin[hook.dialect], self.workdir, env))
        return spawns, refused

    async def run(self, hooks: list[Hook], payload: dict[str, Any]) -> list[HookRun]:
        """Run `hooks` at once; results in config order."""
        if not hooks:
            return []
        spawns, refused = self._spawns(hooks, payload)
        try:
            done = await asyncio.gather(*(asyncio.to_thread(s.run) for s in spawns))
        except asyncio.CancelledError:
            for spawn in spawns:
                spawn.kill()
            raise
        by_hook = {**refused, **{run.hook: run for run in done}}
        return [by_hook[h] for h in hooks]

    def run_sync(self, hooks: list[Hook], payload: dict[str, Any]) -> list[HookRun]:
        """The same from synchronous code (a session switch, the end of a session outside the loop)."""
        if not hooks:
            return []
        from concurrent.futures import ThreadPoolExecutor

        spawns, refused = self._spawns(hooks, payload)
        with ThreadPoolExecutor(max_workers=max(1, len(spawns))) as pool:
            done = list(pool.map(lambda s: s.run(), spawns))
        by_hook = {**refused, **{run.hook: run for run in done}}
        return [by_hook[h] for h in hooks]
