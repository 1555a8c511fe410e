"""Background commands: Shell with `background: true` returns at once; TaskOutput reads, TaskStop ends.

Each task runs in the same sandbox as any other command (its own process group), with its output in a
bounded buffer. At most `max_tasks` run at once per session. When one finishes, the model is told on its
next request; it never has to poll. All tasks die with the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from kimi_cli.sandbox.base import Sandbox, Started, kill_group
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.output import cap_text

KEEP_BYTES = 1_000_000  # of each task's output, the latest
SHOW_CHARS = 30_000


@runtime_checkable
class Spawner(Protocol):
    """A sandbox that can start a long-running command: argv, env, and what the child needs before exec.

    A sandbox may also offer `async start(command) -> Started` (landlock does: its spawner starts the
    task, supervises its sockets and kills it if kimi dies); that is used when present.
    """

    name: str

    def spawn_spec(
        self, command: str
    ) -> tuple[list[str], dict[str, str], Callable[[], None] | None, tuple[int, ...]]: ...


@dataclass
class BackgroundTask:
    id: str
    command: str
    proc: Started
    started: float = field(default_factory=time.monotonic)
    buffer: bytearray = field(default_factory=bytearray)
    total: int = 0  # bytes produced so far; `since` offsets count in these
    exit_code: int | None = None
    finished: float | None = None
    told: bool = False
    reader: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.finished is None

    def status(self) -> str:
        if self.running:
            return f"running for {time.monotonic() - self.started:.0f} s"
        return f"exited with code {self.exit_code}" if self.exit_code is not None else "stopped"


class TaskManager:
    def __init__(self, sandbox: Sandbox, cwd: str, max_tasks: int = 4) -> None:
        # The session's sandbox; a task starts only where it is a Spawner (Docker's is not: Shell says so)
        self.sandbox = sandbox
        self.cwd = cwd
        self.max_tasks = max_tasks
        self.tasks: dict[str, BackgroundTask] = {}
        self._next = 1

    def running(self) -> list[BackgroundTask]:
        return [t for t in self.tasks.values() if t.running]

    async def start(self, command: str) -> BackgroundTask:
        if len(self.running()) >= self.max_tasks:
            ids = ", ".join(t.id for t in self.running())
            raise ToolError(
                f"{self.max_tasks} background tasks are already running ({ids}); stop one with TaskStop first"
            )
        start = getattr(self.sandbox, "start", None)
        if start is not None:
            proc: Started = await start(command)
        elif isinstance(self.sandbox, Spawner):
            argv, env, preexec, fds = self.sandbox.spawn_spec(command)
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=self.cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, start_new_session=True, preexec_fn=preexec, pass_fds=fds,
            )  # fmt: skip
            proc = Started.from_process(process)
        else:
            raise ToolError(f"background commands are not available with the {self.sandbox.name} sandbox")
        task = BackgroundTask(f"task-{self._next}", command, proc)
        self._next += 1
        task.reader = asyncio.ensure_future(self._pump(task))
        self.tasks[task.id] = task
        return task

    async def _pump(self, task: BackgroundTask) -> None:
        try:
            while chunk := await task.proc.output.read(65536):
                task.buffer += chunk
                task.total += len(chunk)
                if len(task.buffer) > KEEP_BYTES:
                    del task.buffer[: len(task.buffer) - KEEP_BYTES]
            # The output is closed; the status arrives with the exit.
            task.exit_code = await task.proc.exited
        except RuntimeError:  # the landlock spawner stopped
            task.exit_code = None
        finally:
            task.finished = time.monotonic()
            kill_group(task.proc.pid)
            task.proc.release()
            if task.proc.transport is not None:
                task.proc.transport.close()
            self._check_protected(task)

    def _check_protected(self, task: BackgroundTask) -> None:
        """The sandbox's guard (base.GuardedSandbox), now the task is over: what it changed in .git/.kimi is put
        back, what it planted in a repository it made is removed, and the task's output says so."""
        check = getattr(self.sandbox, "check_protected", None)
        note = check() if check is not None else ""
        if note:
            task.buffer += (note + "\n").encode()
            task.total += len((note + "\n").encode())

    def get(self, task_id: str) -> BackgroundTask:
        task = self.tasks.get(task_id)
        if task is None:
            known = ", ".join(self.tasks) or "none"
            raise ToolError(f"no background task {task_id!r} (tasks: {known})")
        return task

    def read(self, task_id: str, since: int | None) -> str:
        task = self.get(task_id)
        start = task.total - len(task.buffer)
        offset = max(since or 0, start)
        data = bytes(task.buffer[offset - start :])
        dropped = offset - since if since is not None and offset > since else 0
        lost = f"[{dropped} earlier bytes are no longer kept]\n" if dropped else ""
        text = cap_text(data.decode("utf-8", errors="replace"), SHOW_CHARS) if data else "(no new output)"
        return f"{task.id}: {task.status()}; output since byte {offset} (next since={task.total}):\n{lost}{text}"

    async def stop(self, task_id: str) -> str:
        task = self.get(task_id)
        if task.running:
            kill_group(task.proc.pid)
            task.proc.release()
            if task.reader is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task.reader), 5)
            task.told = True
            return f"{task.id} stopped ({task.command})"
        return f"{task.id} had already {task.status()}"

    def finished_notes(self) -> list[str]:
        """One line per task that finished since the last call: the model's next request carries them."""
        notes = []
        for task in self.tasks.values():
            if not task.running and not task.told:
                task.told = True
                notes.append(
                    f"background task {task.id} (`{task.command[:200]}`) {task.status()}; "
                    f"TaskOutput {task.id} shows its output ({task.total} bytes)"
                )
        return notes

    async def close(self) -> None:
        for task in self.tasks.values():
            if task.running:
                kill_group(task.proc.pid)
                task.proc.release()
        readers = [t.reader for t in self.tasks.values() if t.reader is not None]
        if readers:
            await asyncio.wait(readers, timeout=3)
