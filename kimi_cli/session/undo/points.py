"""Undo points: "before my last prompt" and each step that changed files, read back from the session log
(kimi_cli.session.undo.checkpointer writes it), and the plan that puts the files back and cuts the conversation.

A step whose before and after trees are equal changed nothing and is not an undo point; a turn is an undo
point once one of its steps changed something.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kimi_cli.session.store import Session
from kimi_cli.session.undo.shadow import CheckpointError, FileChange, ShadowRepo


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

    def where(self) -> str:
        """Where the conversation ends once undone to this point, in words."""
        return f'before the prompt "{self.label[:80]}"' if self.kind == "turn" else f"before {self.label}"


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
    return plan_to(shadow, state, pick_point(state, count))


def plan_to(shadow: ShadowRepo, state: UndoState, target: UndoPoint) -> UndoPlan:
    """The files that put the workspace back at `target` (undo's point, or /rewind's prompt)."""
    if state.last_after:  # the snapshot below is checked against the session's last state (no-follow re-reads)
        shadow.expect(state.last_after)
    current = shadow.snapshot()
    skipped = list(shadow.last_skipped)
    big = {path for path, _ in skipped}
    user_edits = shadow.changes(state.last_after, current) if state.last_after else []
    # A file the current snapshot could not hold is never touched: undo only changes what it has seen.
    changes = [c for c in shadow.changes(current, target.tree) if c.path not in big]
    return UndoPlan(target, user_edits, changes, current, skipped)


def apply_undo(shadow: ShadowRepo, session: Session, plan: UndoPlan, cut: str = "undo") -> list[FileChange]:
    """Files back at the plan's tree and the conversation cut there (`cut` names why in the log; empty: the
    conversation is kept, /rewind's code-only answer). The after record makes the restored tree the session's
    latest state, so a later undo tells the user's own edits from it."""
    changes = shadow.restore(plan.target.tree, plan.changes)
    if cut:
        session.append({"kind": "truncate", "keep": plan.target.message_index, "reason": cut})
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
