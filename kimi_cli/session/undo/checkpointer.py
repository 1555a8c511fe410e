"""Checkpoints tied to a session, and undo points: "before my last prompt" and each step that changed files.

The log holds `turn` records (a user prompt began) and `checkpoint` records (a snapshot before and after
a step that may change files). A step whose before and after trees are equal changed nothing and is not
an undo point; a turn is an undo point once one of its steps changed something.

The "after" snapshot does not hold up the next request: it runs as a deferred job of the session (its
worker thread), and the session makes every later record but an event wait for it (so the next step's tool
calls, and its tools, come after it; `records()`, undo and `close()` see it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kimi_cli.session.store import Session
from kimi_cli.session.undo.shadow import CheckpointError, FileChange, ShadowRepo

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop


class SessionCheckpointer:
    """Called by the agent loop around file-changing steps; records tree ids in the session log."""

    def __init__(self, shadow: ShadowRepo, session: Session, notify: Callable[[str], None] | None = None) -> None:
        self.shadow = shadow
        self.session = session
        self.notify = notify  # a notice for the user (the runtime emits it as a Notice event)
        self.failed: str | None = None  # the last failure; later snapshots are still tried
        self._told: set[str] = set()

    def mark_turn(self, message_index: int, prompt: str) -> None:
        self.session.append({"kind": "turn", "message_index": message_index, "prompt": prompt, "time": time.time()})

    async def snapshot(self, phase: str, step: int, message_index: int, tools: list[str]) -> str | None:
        """The tree id of a "before" snapshot (None if it failed). An "after" snapshot is deferred (returns None):
        it completes on the session's worker before anything else about this session is logged."""
        import asyncio  # lazily: `kimi undo` imports this module and must start fast

        if phase == "after":
            loop = asyncio.get_running_loop()
            self.session.defer(lambda: self._deferred(phase, step, message_index, tools, loop))
            return None
        pending = self.session.pending
        if pending is not None:
            await asyncio.wrap_future(pending)
        try:
            tree = await asyncio.to_thread(self.shadow.snapshot)
        except (CheckpointError, OSError) as exc:
            self._failed(phase, step, message_index, str(exc))
            return None
        self._record(phase, step, message_index, tools, tree)
        return tree

    def _deferred(self, phase: str, step: int, message_index: int, tools: list[str], loop: AbstractEventLoop) -> None:
        """A snapshot taken on the session's worker thread; a failure's notice goes to the event loop."""
        try:
            tree = self.shadow.snapshot()
        except (CheckpointError, OSError) as exc:
            self._failed(phase, step, message_index, str(exc), loop)
            return
        self._record(phase, step, message_index, tools, tree)

    def _record(self, phase: str, step: int, message_index: int, tools: list[str], tree: str) -> None:
        record: dict[str, Any] = {
            "kind": "checkpoint",
            "phase": phase,
            "step": step,
            "tree": tree,
            "message_index": message_index,
            "tools": tools,
            "time": time.time(),
        }
        if self.shadow.last_skipped:
            record["not_covered"] = [[path, size] for path, size in self.shadow.last_skipped]
        if self.shadow.last_nested:
            record["nested_repos"] = list(self.shadow.last_nested)
        self.session.append(record)

    def _failed(
        self, phase: str, step: int, message_index: int, error: str, loop: AbstractEventLoop | None = None
    ) -> None:
        """Never silent: the failure goes into the log (`kimi undo --list` shows it) and, once per distinct
        error, to the user as a notice (on the event loop: the UI lives there). The next step tries again."""
        self.failed = error
        self.session.append({"kind": "checkpoint_failed", "phase": phase, "step": step,
                             "message_index": message_index, "error": error[:2000], "time": time.time()})  # fmt: skip
        first_line = error.strip().splitlines()[0][:300] if error.strip() else "unknown error"
        if self.notify is not None and first_line not in self._told:
            self._told.add(first_line)
            message = f"checkpoint {phase} step {step} failed, so undo cannot cover that step: {first_line}"
            if loop is None:
                self.notify(message)
            else:
                with contextlib.suppress(RuntimeError):  # the loop is gone: the log still has it
                    loop.call_soon_threadsafe(self.notify, message)


@dataclass
class UndoPoint:
    """A state the user can go back to: the files (tree) and where the conversation is cut."""

    kind: str  # turn | step
    tree: str
    message_index: int
    label: str
    time: float
    step: int = 0
    after: str | None = None  # step points: the tree the step left behind
    not_covered: list[tuple[str, int]] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)  # nested repositories the snapshot left out


@dataclass
class UndoState:
    points: list[UndoPoint]
    last_after: str | None
    failures: list[dict[str, Any]] = field(default_factory=list)  # checkpoint_failed records, oldest first


def undo_state(records: list[dict[str, Any]]) -> UndoState:
    points: list[UndoPoint] = []
    turn: dict[str, Any] | None = None
    turn_used = False
    before: dict[str, Any] | None = None
    last_after: str | None = None
    failures: list[dict[str, Any]] = []
    for rec in records:
        kind = rec.get("kind")
        if kind == "checkpoint_failed":
            failures.append(rec)
        elif kind == "turn":
            turn, turn_used = rec, False
        elif kind == "checkpoint" and rec.get("phase") == "before":
            before = rec
        elif kind == "checkpoint":
            last_after = str(rec["tree"])
            if before is None or before.get("step") != rec.get("step") or before["tree"] == rec["tree"]:
                before = None
                continue
            skipped = [(str(p), int(s)) for p, s in before.get("not_covered") or []]
            nested = [str(p) for p in before.get("nested_repos") or []]
            if turn is not None and not turn_used:
                turn_used = True
                points.append(
                    UndoPoint("turn", str(before["tree"]), int(turn["message_index"]),
                              str(turn.get("prompt", "")), float(turn.get("time", 0)), not_covered=skipped,
                              nested=nested)
                )  # fmt: skip
            step = int(before.get("step", 0))
            tools = ", ".join(before.get("tools") or []) or "tools"
            points.append(
                UndoPoint("step", str(before["tree"]), int(before.get("message_index", 0)), f"step {step}: {tools}",
                          float(before.get("time", 0)), step, str(rec["tree"]), skipped, nested)
            )  # fmt: skip
            before = None
        elif kind == "truncate":
            keep = int(rec["keep"])
            points = [p for p in points if p.message_index < keep]
            if turn is not None and int(turn["message_index"]) >= keep:
                turn = None
    return UndoState(points, last_after, failures)


def pick_point(state: UndoState, count: int | None) -> UndoPoint:
    """No count: before the last prompt that changed files. N: the N-th undo point from the end."""
    if not state.points and state.failures:
        first = str(state.failures[0].get("error", "")).strip().splitlines()[:1] or ["unknown error"]
        raise CheckpointError(
            f"nothing to undo: {len(state.failures)} snapshot(s) of this session failed (first: {first[0][:200]}); "
            "see `kimi undo --list`"
        )
    if not state.points:
        raise CheckpointError("nothing to undo: no step of this session changed a file")
    if count is None:
        turns = [p for p in state.points if p.kind == "turn"]
        return turns[-1] if turns else state.points[0]
    if count < 1 or count > len(state.points):
        raise CheckpointError(f"there are {len(state.points)} undo points (see --list); {count} is out of range")
    return state.points[-count]


@dataclass
class UndoPlan:
    target: UndoPoint
    user_edits: list[FileChange]
    changes: list[FileChange]
    current: str
    not_covered: list[tuple[str, int]] = field(default_factory=list)  # too large now: left as they are


def plan_undo(shadow: ShadowRepo, session: Session, count: int | None) -> UndoPlan:
    state = undo_state(session.records())
    target = pick_point(state, count)
    if state.last_after:  # the snapshot below is checked against the session's last state (no-follow re-reads)
        shadow.expect(state.last_after)
    current = shadow.snapshot()
    skipped = list(shadow.last_skipped)
    big = {path for path, _ in skipped}
    user_edits = shadow.changes(state.last_after, current) if state.last_after else []
    # A file the current snapshot could not hold is never touched: undo only changes what it has seen.
    changes = [c for c in shadow.changes(current, target.tree) if c.path not in big]
    return UndoPlan(target, user_edits, changes, current, skipped)


def apply_undo(shadow: ShadowRepo, session: Session, plan: UndoPlan) -> list[FileChange]:
    changes = shadow.restore(plan.target.tree, plan.changes)
    session.append({"kind": "truncate", "keep": plan.target.message_index, "reason": "undo"})
    session.append(
        {
            "kind": "checkpoint",
            "phase": "after",
            "step": plan.target.step,
            "tree": plan.target.tree,
            "message_index": plan.target.message_index,
        }
    )
    session.end_step(int(session.meta.get("steps", 0)))
    return changes


def describe_points(shadow: ShadowRepo, state: UndoState, limit: int = 30) -> list[str]:
    """Lines for `undo --list`: number (from the end), time, what, and the files it changed."""
    lines: list[str] = []
    points = state.points
    for index, point in enumerate(points):
        number = len(points) - index
        if number > limit:
            continue
        nxt = index + 1
        end = point.after if point.kind == "step" else _turn_end(points, nxt, state.last_after)
        files = ", ".join(f"{c.path} ({c.status})" for c in shadow.changes(point.tree, end)) if end else ""
        when = time.strftime("%H:%M:%S", time.localtime(point.time)) if point.time else "--:--:--"
        what = f'prompt "{point.label[:60]}"' if point.kind == "turn" else f"  {point.label}"
        lines.append(f"{number:>3}  {when}  {what:<50}  {files or '(no file changes)'}")
        if point.not_covered:
            missed = ", ".join(f"{p}, {s / 1e6:.0f} MB" for p, s in point.not_covered[:5])
            lines.append(f"{'':>15}not covered (too large to snapshot): {missed}")
        if point.nested:
            lines.append(f"{'':>15}not covered (nested repository): {', '.join(point.nested[:5])}")
    return lines + describe_failures(state)


def describe_failures(state: UndoState) -> list[str]:
    """Lines for snapshots that failed: those steps cannot be undone, and the user should know why."""
    lines = []
    for rec in state.failures[-10:]:
        when = time.strftime("%H:%M:%S", time.localtime(float(rec.get("time", 0)))) if rec.get("time") else "--:--:--"
        error = " ".join(str(rec.get("error", "")).split())[:200]
        lines.append(f"  !  {when}  snapshot {rec.get('phase', '')} step {rec.get('step', '?')} failed: {error}")
    if len(state.failures) > 10:
        lines.insert(0, f"  !  {len(state.failures) - 10} earlier snapshot failures not shown")
    return lines


def _turn_end(points: list[UndoPoint], start: int, last_after: str | None) -> str | None:
    """A turn's changes run to the next turn's starting tree, or to the latest state."""
    for point in points[start:]:
        if point.kind == "turn":
            return point.tree
    return last_after
