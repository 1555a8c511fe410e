"""Grep: regex search with ripgrep (linear time: no pattern can hang the session), .gitignore respected."""

from __future__ import annotations

import re
from collections.abc import Awaitable

from pydantic import BaseModel, Field

from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.output import cap_text
from kimi_cli.tools.ripgrep import MAX_LINE_CHARS, RgOutput, find_rg, run_rg

DEFAULT_TIMEOUT = 20.0
OUTPUT_CAP = 50_000


class GrepParams(BaseModel):
    pattern: str = Field(description="Regular expression (Rust syntax: no look-around or backreferences).")
    path: str | None = Field(None, description="File or folder (default: the workspace).")
    glob: str | None = Field(None, description="Only paths matching this glob.")
    ignore_case: bool = Field(False, description="Case-insensitive.")
    context: int = Field(0, ge=0, le=20, description="Lines around each match.")
    max_results: int = Field(200, ge=1, le=5000, description="Output lines at most.")
    hidden: bool = Field(False, description="Search hidden (.name) files too.")
    no_ignore: bool = Field(False, description="Search ignored files too.")


def rg_argv(rg: str, params: GrepParams, target: str, kimiignore: bool, null: bool = False) -> list[str]:
    """The exact rg command line for a search (pure, so it can be asserted). `null`: a NUL after each path,
    so that lines can be checked against the files (grep_verify)."""
    argv = [rg, "--line-number", "--with-filename", "--no-heading", "--color", "never", "--no-messages"]
    if null:
        argv.append("--null")
    argv += ["--no-require-git", "--no-config"]  # .gitignore counts outside git too; no user rg config
    if params.ignore_case:
        argv.append("--ignore-case")
    if params.context:
        argv += ["--context", str(params.context)]
    if params.hidden:
        argv.append("--hidden")
    if params.no_ignore:
        argv.append("--no-ignore")
    elif kimiignore:
        argv += ["--ignore-file", ".kimiignore"]
    if params.glob:
        argv += ["--glob", params.glob]
    argv += ["--regexp", params.pattern, "--", target]
    return argv


class Grep(Tool[GrepParams]):
    name = "Grep"
    description = (
        "Search file contents by regex with ripgrep: lines come back as `path:line:text`. For definitions, "
        "callers, error messages; use it, not grep or rg in Shell. Ignored, hidden and binary files are skipped "
        "unless asked; a search stops after 20 s (by default). Several Greps in one answer run in parallel. "
        'Example: {"pattern": "def parse_\\\\w+", "glob": "**/*.py", "context": 2}'
    )
    Params = GrepParams
    facts = READS

    def facts_for(self, params: GrepParams) -> ToolFacts:
        return READS.reading(params.path or "")

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, confine: bool = True) -> None:
        self.timeout = timeout
        self.confine = confine  # False: never Landlock, always check rg's lines (what kernels without it get)

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        import asyncio

        from kimi_cli.hostsafe.confined_reader import confined_runner
        from kimi_cli.sandbox.base import kill_group
        from kimi_cli.tools.grep_verify import verified_lines

        root = ctx.workspace.root
        base = ctx.workspace.resolve(params.path or ".")
        rel = ctx.workspace.relative(base)
        rg = find_rg((root,))
        # rg reads by path: under Landlock it cannot read outside the workspace whatever a link says;
        # without Landlock every line it prints is checked against a no-follow read of the file.
        runner = await asyncio.to_thread(confined_runner, root, rg) if self.confine else None
        argv = rg_argv(rg, params, rel, (root / ".kimiignore").is_file(), null=runner is None)
        started: list[int] = []

        def search() -> Awaitable[RgOutput]:
            return run_rg(argv, root, params.max_results, self.timeout, on_start=started.append)

        try:
            out = await (runner.run(search) if runner is not None else search())
        except asyncio.CancelledError:
            for pid in started:  # on the confined thread rg would run on to its own timeout: end it now
                kill_group(pid)
            raise
        found = out.lines if runner is not None else verified_lines(root, out.lines, MAX_LINE_CHARS)
        if out.timed_out:
            shown = "\n".join(_strip_dot(line) for line in found)
            note = f"[search stopped after {self.timeout:g} s; narrow the path or the glob]"
            return ToolResult(cap_text(f"{shown}\n{note}" if shown else note, OUTPUT_CAP), is_error=not found)
        if out.exit_code == 2 and not out.lines and out.stderr.strip():  # --no-messages: only fatal errors speak
            raise ToolError(f"invalid regex {params.pattern!r}: {_rg_error(out.stderr)}")
        if not found:
            return ToolResult(f"no matches for {params.pattern!r}", display=_display(params, [], False))
        lines = [_strip_dot(line) for line in found]
        display = _display(params, lines, out.stopped_early)
        if out.stopped_early:
            lines.append(f"[stopped at max_results={params.max_results}]")
        return ToolResult(cap_text("\n".join(lines), OUTPUT_CAP), display=display)


def _strip_dot(line: str) -> str:
    return line[2:] if line.startswith("./") else line


def _rg_error(stderr: str) -> str:
    text = " ".join(line.strip() for line in stderr.splitlines() if line.strip())
    return text[:500] or "ripgrep refused the pattern"


def _display(params: GrepParams, lines: list[str], truncated: bool) -> dict[str, object]:
    """Matching lines and the files they are in, for the UI (context lines use `-` after the line number)."""
    matches = [line for line in lines if re.match(r"^.+?:\d+:", line)] if params.context else lines
    files = {line.split(":", 1)[0] for line in matches}
    return {"kind": "grep", "pattern": params.pattern, "matches": len(matches), "files": len(files),
            "truncated": truncated}  # fmt: skip
