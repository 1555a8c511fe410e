"""Checkpoints tied to a session: snapshots before and after each step that changes files, and undo."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kimi_cli.checkpoints import CheckpointError, FileChange, ShadowRepo
from kimi_cli.session.store import Session


class SessionCheckpointer:
    """Called by the agent loop around file-changing steps; records tree ids in the session log."""

    def __init__(self, shadow: ShadowRepo, session: Session) -> None:
        self.shadow = shadow
        self.session = session
        self.failed: str | None = None

    async def snapshot(self, phase: str, step: int, message_index: int) -> str | None:
        if self.failed:
            return None
        import asyncio  # lazily: `kimi undo` imports this module and must start fast

        try:
            tree = await asyncio.to_thread(self.shadow.snapshot)
        except (CheckpointError, OSError) as exc:
            self.failed = str(exc)
            return None
        self.session.append(
            {"kind": "checkpoint", "phase": phase, "step": step, "tree": tree, "message_index": message_index}
        )
        return tree


@dataclass
class Checkpoint:
    step: int
    tree: str
    message_index: int


@dataclass
class UndoState:
    """The checkpoints still in force after earlier undos, and the tree after the agent's last step."""

    befores: list[Checkpoint]
    last_after: str | None


def undo_state(records: list[dict[str, Any]]) -> UndoState:
    befores: list[Checkpoint] = []
    last_after: str | None = None
    for rec in records:
        kind = rec.get("kind")
        if kind == "checkpoint":
            cp = Checkpoint(int(rec.get("step", 0)), str(rec["tree"]), int(rec.get("message_index", 0)))
            if rec.get("phase") == "before":
                befores.append(cp)
            else:
                last_after = cp.tree
        elif kind == "truncate":
            keep = int(rec["keep"])
            befores = [b for b in befores if b.message_index < keep]
    return UndoState(befores, last_after)


@dataclass
class UndoPlan:
    target: Checkpoint
    user_edits: list[FileChange]
    changes: list[FileChange]
    current: str


def plan_undo(shadow: ShadowRepo, session: Session, steps: int) -> UndoPlan:
    state = undo_state(session.records())
    if not state.befores:
        raise CheckpointError("this session has no file-changing steps to undo")
    if steps < 1 or steps > len(state.befores):
        raise CheckpointError(f"can undo 1 to {len(state.befores)} steps in this session, not {steps}")
    target = state.befores[-steps]
    current = shadow.snapshot()
    user_edits = shadow.changes(state.last_after, current) if state.last_after else []
    return UndoPlan(target, user_edits, shadow.changes(current, target.tree), current)


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
