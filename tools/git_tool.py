"""Git: structured git through gitpython, outside the sandbox. It never pushes and refuses what loses work.

Every call goes through kimi_cli.hostsafe.git.host: repository config cannot start a program on the host.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any, Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.output import cap_text

DIFF_CAP = 40_000


class GitParams(BaseModel):
    command: Literal["status", "diff", "log", "show", "add", "commit", "branch", "switch", "restore"] = Field(
        description="The git operation."
    )
    paths: list[str] | None = Field(None, description="add, diff, restore: these files.")
    rev: str | None = Field(None, description="show, log, diff: a commit, branch or tag.")
    staged: bool = Field(False, description="diff: staged changes; restore: unstage.")
    all: bool = Field(False, description="add: every change, new files too.")
    message: str | None = Field(None, description="commit: the message.")
    name: str | None = Field(None, description="branch: new name; switch: target.")
    create: bool = Field(False, description="switch: create it first.")
    delete: bool = Field(False, description="branch: delete `name` (merged, not current).")
    max_count: int = Field(20, ge=1, le=500, description="log: how many commits.")
    force: bool = Field(False, description="Always refused.")


class GitIdentity(BaseModel):
    name: str | None = None
    email: str | None = None
    co_author_trailer: str | None = None
    allow_hooks: bool = False


class Git(Tool[GitParams]):
    name = "Git"
    description = (
        "Git for the workspace repository, run outside the sandbox (use it, not git in Shell): status, diff "
        "(capped, with a stat), log, show, add, commit, branch, switch, restore. Start with status: uncommitted "
        "work you did not make is the user's. Commit only when the user asks. Never pushes; forced operations "
        "are refused; restore and switch can discard uncommitted changes, so ask first unless they are yours. "
        'Example: {"command": "diff", "paths": ["src/app.py"]}'
    )
    Params = GitParams
    facts = ToolFacts(reads=True, writes=True)  # add, commit, switch and restore change the tree or .git

    def __init__(self, identity: GitIdentity | None = None) -> None:
        self.identity = identity or GitIdentity()

    def facts_for(self, params: GitParams) -> ToolFacts:
        if params.command == "branch":
            reads_only = not params.name and not params.delete
        else:
            reads_only = params.command in ("status", "diff", "log", "show")
        return READS if reads_only else self.facts

    async def run(self, params: GitParams, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._run_sync, params, ctx)

    def _run_sync(self, params: GitParams, ctx: ToolContext) -> ToolResult:
        import git

        from kimi_cli.hostsafe.git.host import SafeGit
        from kimi_cli.hostsafe.git.location import UnsafeRepository
        from kimi_cli.hostsafe.git.repo_guard import open_repo

        if params.force:
            raise ToolError("refused: forced git operations can destroy work; do it without force")
        try:
            location = open_repo(ctx.workspace.root)
        except UnsafeRepository as exc:
            raise ToolError(str(exc)) from None
        if location is None:
            raise ToolError("the workspace is not a git repository; the other tools still work")
        repo = RepoHandle(SafeGit(ctx.workspace.root, location))
        handler = getattr(self, f"_{params.command}")
        try:
            output = handler(repo, params, ctx)
        except git.GitCommandError as exc:
            detail = (exc.stderr or exc.stdout or str(exc)).strip().removeprefix("stderr: ").strip("'\n ")
            raise ToolError(f"git {params.command} failed: {detail}") from None
        except UnsafeRepository as exc:  # `.git` changed between this call's checks and one of its git runs
            raise ToolError(str(exc)) from None
        return ToolResult((output or "(no output)") + _planted_warning(ctx.workspace.root))

    # --- read-only commands -------------------------------------------------------------------------

    def _status(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        return str(repo.git.status("--porcelain=v1", "--branch", "--untracked-files=all"))

    def _diff(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        args = ["--cached"] if params.staged else []
        if params.rev:
            args.append(_rev(params.rev))
        paths = ["--", *self._paths(params, ctx)] if params.paths else []
        stat = repo.git.diff(*args, "--stat", *paths)
        body = repo.git.diff(*args, *paths)
        if not body:
            return "no differences"
        return f"{stat}\n\n{cap_text(body, DIFF_CAP)}"

    def _log(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if not repo.head_is_valid():
            return "no commits yet"
        args = [f"--max-count={params.max_count}", "--format=%h %ad %an: %s", "--date=short"]
        return str(repo.git.log(*args, *([_rev(params.rev)] if params.rev else [])))

    def _show(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if not repo.head_is_valid() and not params.rev:
            return "no commits yet"
        out = repo.git.show(_rev(params.rev or "HEAD"), "--stat", "--patch", "--format=%H%n%an <%ae>%n%ad%n%n%B")
        return cap_text(str(out), DIFF_CAP)

    # --- commands that change the repository -----------------------------------------------------------

    def _add(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if params.all:
            repo.git.add("--all")
        elif params.paths:
            repo.git.add("--", *self._paths(params, ctx))
        else:
            raise ToolError("add needs `paths` or all=true")
        return self._status(repo, params, ctx)

    def _commit(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if not params.message or not params.message.strip():
            raise ToolError("commit needs a non-empty `message`")
        from kimi_cli.hostsafe.git.repo_guard import active_hooks, commit_hooks_dir

        hooks = active_hooks(ctx.workspace.root)
        if hooks and not self.identity.allow_hooks:
            raise ToolError(
                f"refused: this repository has commit hooks ({', '.join(hooks)}) that would run repository code "
                "outside the sandbox. The user can allow them with `[git] allow_hooks = true` in .kimi/config.toml"
            )
        changed = [name for name, same in hooks.items() if not same]
        if changed:
            raise ToolError(
                f"refused: the commit hooks {', '.join(changed)} were written or changed after the session started; "
                "kimi runs only the hooks it saw at start. The user can check them and start a new session."
            )
        if not repo.git.diff("--cached", "--name-only") and repo.head_is_valid():
            raise ToolError("nothing is staged; use add first")
        message = params.message.strip()
        if self.identity.co_author_trailer:
            message += f"\n\n{self.identity.co_author_trailer}"
        env = {}
        if self.identity.name and self.identity.email:
            for role in ("AUTHOR", "COMMITTER"):
                env[f"GIT_{role}_NAME"] = self.identity.name
                env[f"GIT_{role}_EMAIL"] = self.identity.email
        if not hooks:
            repo.git.with_config((), env).commit("--no-verify", "-m", message)
            return str(repo.git.log("-1", "--format=committed %h on %D: %s"))
        folder = commit_hooks_dir(ctx.workspace.root)  # the hook files as they were at session start
        try:
            # Hooks are programs the user allowed: this one call runs outside git_confine's domain.
            repo.git.with_config([("core.hooksPath", str(folder))], env, confined=False).commit("-m", message)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return str(repo.git.log("-1", "--format=committed %h on %D: %s"))

    def _branch(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if params.delete:
            name = _branch_name(repo, params.name)
            if repo.current_branch() == name:
                raise ToolError(f"refused: {name} is the current branch; switch to another branch first")
            repo.git.branch("-d", name)  # -d refuses unmerged branches; -D is never used
            return f"deleted branch {name}"
        if params.name:
            repo.git.branch(_branch_name(repo, params.name), *([_rev(params.rev)] if params.rev else []))
        return str(repo.git.branch("--list", "-vv"))

    def _switch(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        name = _branch_name(repo, params.name)
        repo.git.switch(*(["-c", name] if params.create else [name]))  # never --discard-changes / --force
        return self._status(repo, params, ctx)

    def _restore(self, repo: Any, params: GitParams, ctx: ToolContext) -> str:
        if not params.paths:
            raise ToolError("restore needs `paths`")
        args = ["--staged"] if params.staged else []
        if params.rev:
            args.append(f"--source={_rev(params.rev)}")
        repo.git.restore(*args, "--", *self._paths(params, ctx))
        return self._status(repo, params, ctx)

    def _paths(self, params: GitParams, ctx: ToolContext) -> list[str]:
        out = []
        for raw in params.paths or []:
            path = ctx.workspace.resolve(raw)
            out.append(ctx.workspace.relative(path))
        return out


def _rev(rev: str) -> str:
    if rev.startswith("-") or any(c.isspace() for c in rev):
        raise ToolError(f"invalid revision {rev!r}")
    return rev


def _branch_name(repo: Any, name: str | None) -> str:
    import git

    if not name:
        raise ToolError("this command needs a branch `name`")
    try:
        repo.git.check_ref_format("--branch", name)
    except git.GitCommandError:
        raise ToolError(f"invalid branch name {name!r}") from None
    return name


def _planted_warning(root: Any) -> str:
    """Settings naming a program that appeared during the session: kimi ran none, a hand-run git would."""
    from kimi_cli.hostsafe.git.repo_guard import planted_since_start

    planted = planted_since_start(root)
    if not planted:
        return ""
    shown = "; ".join(p if len(p) <= 160 else p[:157] + "..." for p in planted[:8])
    return (
        f"\n\nwarning: the repository's config gained settings that name programs during this session ({shown}). "
        "kimi's git never runs them, but git run by hand in this folder would: tell the user to check .git/config."
    )


class RepoHandle:
    """What the commands need of a repository: the safe command runner and two questions about HEAD."""

    def __init__(self, safe_git: Any) -> None:
        self.git = safe_git

    def head_is_valid(self) -> bool:
        status, _, _ = self.git.rev_parse("--verify", "--quiet", "HEAD", with_extended_output=True,
                                          with_exceptions=False)  # fmt: skip
        return bool(status == 0)

    def current_branch(self) -> str | None:
        status, out, _ = self.git.symbolic_ref("--quiet", "--short", "HEAD", with_extended_output=True,
                                               with_exceptions=False)  # fmt: skip
        return str(out).strip() or None if status == 0 else None
