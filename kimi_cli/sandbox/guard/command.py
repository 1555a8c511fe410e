"""What is checked around every sandboxed command, the same on every backend (bwrap, landlock, docker).

Two parts, run before and after each command, when a background task ends, and when the sandbox closes:
- restore.GitGuard puts back the workspace's `.git` (config, hooks, info/attributes, links...) and `.kimi`
  as the session found them: every backend, although bwrap and Docker also mount them read-only, because a
  mount covers only what existed at the start and a guard that always runs cannot be forgotten by one path.
  What a read-only mount already keeps (HEAD, refs: the Git tool's own changes) is not walked there;
- workspace_repos.WorkspaceRepos takes out what would run a program from any other repository a command
  made or changed (`git init` and `core.fsmonitor` in a plain folder, a nested one, a `.git` pointer).

Everything found goes into the command's result for the model; what was removed is kept for the session's
headless result too (`git_settings_removed`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.kernel.contain import inside_any
from kimi_cli.sandbox.guard.repo_scrub import Removed
from kimi_cli.sandbox.guard.restore import GitGuard, guarded_paths, repair_note


@dataclass
class GuardReport:
    """What one check found: paths put back, and settings removed from repositories commands made."""

    repaired: list[str] = field(default_factory=list)
    removed: list[Removed] = field(default_factory=list)
    limits: str = ""

    def note(self, workspace: Path, by: str = "the command") -> str:
        text = repair_note(self.repaired, workspace, by) if self.repaired else ""
        if self.removed:
            shown = ", ".join(r.text() for r in self.removed[:6])
            more = f" and {len(self.removed) - 6} more" if len(self.removed) > 6 else ""
            text += (
                f"\n[kimi: {by} made or changed a git repository whose settings would run programs whenever git is "
                f"used there, by the user too; removed: {shown}{more}. Repositories made in the sandbox keep no hooks, "
                "fsmonitor, filters, diff or merge drivers, pagers, editors, ssh or credential helpers, includes or "
                "'!' aliases; git init, commit and branch work as before. Use the Git tool for git operations.]"
            )
        return text + self.limits


class CommandGuard:
    """The checks for one session's workspace; `mounted` are the folders the backend mounts read-only."""

    def __init__(self, workspace: Path, mounted: tuple[Path, ...] = ()) -> None:
        from kimi_cli.sandbox.guard.workspace_repos import WorkspaceRepos

        self.workspace = workspace
        strict, loose = guarded_paths(workspace)
        loose = [p for p in loose if not inside_any(p, mounted)]
        self.git = GitGuard(workspace, strict, loose)
        skip: set[str] = set()  # what GitGuard restores whole is not scrubbed as well
        for path in strict:
            rel = os.path.relpath(path, workspace)
            if path.name == "config":
                skip.add(os.path.dirname(rel))
            elif path.name == ".git":
                skip.add(rel)
        self.repos: WorkspaceRepos | None
        try:
            self.repos = WorkspaceRepos(workspace, skip)
        except OSError:
            self.repos = None
        self.removed: list[Removed] = []  # everything taken out this session, for the headless result
        self._told_limits = False

    def before(self) -> GuardReport:
        """Before a command: repair what changed since the last one (a background task), the loose baseline."""
        return GuardReport(self.git.before(), self._scrub())

    def after(self) -> GuardReport:
        report = GuardReport(self.git.after(), self._scrub())
        report.limits = self._limits()
        return report

    def accept(self, rel: str, data: bytes) -> bool:
        """kimi itself wrote `rel` (workspace-relative, e.g. a saved rule in .kimi/config.toml): keep it."""
        return self.git.accept(rel, data)

    def check(self, by: str) -> str:
        """Between commands (a background task ended): the note for what it did, empty when nothing."""
        return self.before().note(self.workspace, by)

    def close(self) -> None:
        self.before()
        if self.repos is not None:
            self.repos.close()

    def _scrub(self) -> list[Removed]:
        """Never takes the Shell tool down (a command shapes what is walked): a failure is reported."""
        if self.repos is None:
            return []
        try:
            found = self.repos.check()
        except Exception as exc:
            found = [Removed("(workspace)", "repositories could NOT be checked", type(exc).__name__)]
        self.removed += found
        return found

    def _limits(self) -> str:
        """Once a session: the folders or repositories too many to look at, when a command made that many."""
        repos = self.repos
        if self._told_limits or repos is None or not (repos.tree.partial or repos.unchecked):
            return ""
        self._told_limits = True
        return (
            "\n[kimi: this workspace now has more folders (or repositories) than kimi looks into after each command; "
            "repositories made past that are not checked for settings that run programs.]"
        )
