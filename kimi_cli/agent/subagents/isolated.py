"""A subagent in its own git worktree (`isolation: "worktree"`): made from the parent checkout's HEAD, worked in
with a sandbox whose workspace is that worktree, and merged back into the parent checkout with real git on the
host (kimi_cli.worktrees.trees, through hostsafe's host git) when the subagent ends.

Merges are one at a time (parallel coders end at about the same time; git's index lock would refuse the
second). A conflict is left in the parent checkout, and the parent's tool result carries the conflicted hunks:
the model resolves the markers and commits with the Git tool. The parent's uncommitted changes are not in the
worktree (it starts from HEAD), and a merge that would overwrite them is refused by git and told.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.errors import KimiError
from kimi_cli.worktrees import trees
from kimi_cli.worktrees.trees import Worktree

HUNKS_CAP = 6000  # characters of conflicted hunks in the parent's tool result


@dataclass
class Landing:
    """How a subagent's worktree came back: the text added to its report."""

    merged: bool
    note: str


def open_tree(parent: Path, run_id: str) -> Worktree:
    """A fresh worktree for one subagent run, on branch kimi/agent-<stamp>-<run id>."""
    return trees.create(parent, f"agent-{trees.new_name()}-{run_id}")


async def land(parent: Path, tree: Worktree, summary: str, lock: asyncio.Lock) -> Landing:
    """Commit what the subagent left, merge its branch into the parent checkout, and remove the worktree
    (its branch too once merged; kept when the merge conflicted or was refused)."""
    try:
        changed = await asyncio.to_thread(trees.commit_pending, tree, f"kimi: subagent: {summary}"[:200])
        commits, _ = await asyncio.to_thread(trees.changes, parent, tree, tree.base or None)
        if not changed and commits == 0:
            await asyncio.to_thread(trees.remove, parent, tree.name, False, True)
            return Landing(True, f"[worktree {tree.name}: no changes to merge]")
        async with lock:
            result = await asyncio.to_thread(trees.merge, parent, tree.branch)
    except KimiError as exc:
        return Landing(False, f"[its worktree {tree.path} (branch {tree.branch}) could not be merged: {exc}]")
    if result.merged:
        await asyncio.to_thread(_remove_quietly, parent, tree, False)
        return Landing(True, f"[its changes ({commits} commit(s) on {tree.branch}) were merged into this checkout]")
    await asyncio.to_thread(_remove_quietly, parent, tree, True)
    if not result.conflicts:
        return Landing(False, f"[its branch {tree.branch} was not merged: {result.message}]")
    hunks = result.hunks if len(result.hunks) <= HUNKS_CAP else result.hunks[:HUNKS_CAP] + "\n[hunks cut]"
    return Landing(False, f"[CONFLICT: {result.message}. The conflicted hunks:\n{hunks}]")


def _remove_quietly(parent: Path, tree: Worktree, keep_branch: bool) -> None:
    # a worktree left behind is listed by `kimi worktree list`; the merge result is what matters
    with contextlib.suppress(KimiError):
        trees.remove(parent, tree.name, keep_branch=keep_branch, force=True)
