"""Rewinding to an earlier prompt (`/rewind`): each prompt of the conversation as it stands, with its turn
number and the files it changed, read from the session log as undo's points are (kimi_cli.session.undo.points);
going back reuses undo's plan and restore, and the log's truncate record for the conversation.

A prompt's tree is the workspace before it: its turn's first "before" snapshot, or, for a turn that ran no
file-changing step, the state the previous steps left (the next snapshot when there was none yet). Without
any snapshot the code cannot go back there, only the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kimi_cli.session.store import Session
from kimi_cli.session.undo.points import UndoPlan, UndoPoint, apply_undo, plan_to, undo_state
from kimi_cli.session.undo.shadow import FileChange, ShadowRepo

MODES = ("both", "code", "conversation")


@dataclass
class Prompt:
    turn: int  # 1 for the conversation's first prompt
    prompt: str
    message_index: int  # where the conversation is cut to go back before it
    time: float
    tree: str | None = None  # the files before it; None: no snapshot to go back to
    start: str | None = None  # its own first and last snapshots: what it changed
    end: str | None = None
    changed: list[FileChange] = field(default_factory=list)

    def files(self) -> str:
        return ", ".join(f"{c.path} ({c.status})" for c in self.changed) or "no file changes"


def prompts(records: list[dict[str, Any]]) -> list[Prompt]:
    """The prompts of the conversation as it stands now (cut ones left out), oldest first."""
    out: list[Prompt] = []
    seen: str | None = None  # the latest tree in the log so far
    waiting: list[Prompt] = []  # prompts before any snapshot: their tree is the first one that comes
    for rec in records:
        kind = rec.get("kind")
        if kind == "turn":
            current = Prompt(0, str(rec.get("prompt", "")), int(rec.get("message_index", 0)),
                             float(rec.get("time", 0)), seen)  # fmt: skip
            out.append(current)
            if seen is None:
                waiting.append(current)
        elif kind == "checkpoint" and rec.get("tree"):
            tree = str(rec["tree"])
            for early in waiting:
                early.tree = tree
            waiting.clear()
            if out and rec.get("phase") == "before" and out[-1].start is None:
                out[-1].start = out[-1].tree = tree
            elif out and rec.get("phase") == "after" and "tools" in rec and out[-1].start is not None:
                out[-1].end = tree
            seen = tree
        elif kind == "truncate":
            keep = int(rec.get("keep", 0))
            out = [p for p in out if p.message_index < keep]
            waiting = [p for p in waiting if p.message_index < keep]
    for number, prompt in enumerate(out, 1):
        prompt.turn = number
    return out


def with_changes(shadow: ShadowRepo, found: list[Prompt]) -> list[Prompt]:
    """Each prompt's changed files, from its own first to its last snapshot (a user's edit between prompts
    is not the prompt's)."""
    for prompt in found:
        if prompt.start and prompt.end and prompt.start != prompt.end:
            prompt.changed = shadow.changes(prompt.start, prompt.end)
    return found


def plan_rewind(shadow: ShadowRepo, session: Session, prompt: Prompt) -> UndoPlan:
    """Undo's plan, to the tree before `prompt` (CheckpointError when there is none)."""
    from kimi_cli.session.undo.shadow import CheckpointError

    if prompt.tree is None:
        raise CheckpointError("no snapshot before that prompt: only the conversation can go back")
    target = UndoPoint("turn", prompt.tree, prompt.message_index, prompt.prompt, prompt.time)
    return plan_to(shadow, undo_state(session.records()), target)


def rewind(shadow: ShadowRepo, session: Session, prompt: Prompt, mode: str, plan: UndoPlan | None) -> None:
    """Go back before `prompt`: the files (code), the conversation, or both. `plan` is plan_rewind's, for code."""
    if mode in ("both", "code"):
        assert plan is not None
        apply_undo(shadow, session, plan, cut="undo" if mode == "both" else "")
    else:
        session.append({"kind": "truncate", "keep": prompt.message_index, "reason": "rewind"})


def later_prompts(records: list[dict[str, Any]], point: UndoPoint) -> list[Prompt]:
    """The prompts an undo to `point` takes away beside the one it names: those after it."""
    return [p for p in prompts(records) if p.message_index > point.message_index]
