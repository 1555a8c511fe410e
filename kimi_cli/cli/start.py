"""The main command's work, without Typer: `kimi` and `kimi -p TASK` once their flags are parsed, by Typer
(kimi_cli.cli.main) or, for a headless run whose flags are all plain, by kimi_cli.cli.headless_args, so that
`kimi -p` never imports Typer. Every path out is SystemExit with kimi's exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

PICK = "@pick"  # `-r` with no id: the interactive session shows a picker
AUTO_NAME = "@auto"  # `--worktree` with no name: one is made up


def expand_argv(argv: list[str]) -> list[str]:
    """`kimi -r` / `kimi --resume` with no id (last, or before another option) means: pick one; `--worktree`
    with no name: make one up."""
    out = list(argv)
    for index in range(len(out) - 1, -1, -1):
        if out[index] in ("-r", "--resume") and (index == len(out) - 1 or out[index + 1].startswith("-")):
            out.insert(index + 1, PICK)
        elif out[index] == "--worktree" and (index == len(out) - 1 or out[index + 1].startswith("-")):
            out.insert(index + 1, AUTO_NAME)
    return out


def is_ci_repair(argv: list[str]) -> bool:
    """`kimi ci-repair ...`: the subcommand is the first word that is not an option."""
    return next((arg for arg in argv if not arg.startswith("-")), None) == "ci-repair"


def json_format(argv: list[str]) -> bool:
    for index, arg in enumerate(argv):
        if arg.startswith("--output-format="):
            return arg.split("=", 1)[1] in ("json", "stream-json")
        if arg == "--output-format" and index + 1 < len(argv):
            return argv[index + 1] in ("json", "stream-json")
    return False


def _say(message: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(message + "\n")
    stream.flush()


def usage(message: str) -> NoReturn:
    """A usage error: the words on stderr, exit 2 (ci-repair's result and report, or the JSON result object,
    written too)."""
    from kimi_cli.util.sanitize import visible

    _say(f"kimi: {visible(message)}", err=True)
    if is_ci_repair(sys.argv[1:]):  # its JSON result and --report, written for usage errors too
        from kimi_cli.frontends.ci_repair.repair import usage_failure

        raise SystemExit(usage_failure(sys.argv[sys.argv.index("ci-repair") + 1 :], message))
    if json_format(sys.argv[1:]):
        from kimi_cli.frontends.headless.app import result_object
        from kimi_cli.util.jsonsafe import dumps

        _say(dumps(result_object("usage_error", 2, message=message, error="usage")))
    raise SystemExit(2)


def start(
    *,
    prompt: str | None = None,
    output_format: str = "text",
    image: list[str] | None = None,
    continue_: bool = False,
    resume: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    max_steps: int | None = None,
    max_tokens: int | None = None,
    context_length: int | None = None,
    mcp_config: list[Path] | None = None,
    effort: str | None = None,
    no_thinking: bool = False,
    yolo: bool = False,
    plan: bool = False,
    output_schema: Path | None = None,
    visual_check: str | None = None,
    visual_target: float | None = None,
    visual_size: str | None = None,
    fork: str | None = None,
    trust_folder: bool = False,
    sandbox: str | None = None,
    allow_network: bool = False,
    workdir: Path | None = None,
    branch: str | None = None,
    worktree: str | None = None,
    attempts: int | None = None,
    check: str | None = None,
    patch: Path | None = None,
    no_pack: bool = False,
    pack_budget: int | None = None,
    compact_at: float | None = None,
) -> NoReturn:
    """The interactive session, or the headless run with `prompt`: the main command's flags, checked first."""
    if output_format not in ("text", "json", "stream-json"):
        usage(f"--output-format must be text, json or stream-json, not {output_format!r}")
    if effort is not None and effort not in ("low", "high", "max"):
        usage(f"--effort must be low, high or max, not {effort!r}")
    from kimi_cli.frontends.headless.app import RunOptions, run_headless

    flags: dict[str, object] = {
        "model": model,
        "provider": provider,
        "base_url": base_url,
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "context_length": context_length,
        "thinking": False if no_thinking else None,
        "effort": effort,
        "mcp_config": [os.path.abspath(p.expanduser()) for p in mcp_config] if mcp_config else None,
        "yolo": yolo or None,
        "trust": trust_folder or None,
        "plan": plan or None,
    }
    context = {"pack": False if no_pack else None, "budget": pack_budget, "compact_at": compact_at}
    if any(v is not None for v in context.values()):
        flags["context"] = {k: v for k, v in context.items() if v is not None}
    if sandbox is not None or allow_network:
        flags["sandbox"] = {k: v for k, v in (("mode", sandbox), ("allow_network", allow_network or None)) if v}
    if prompt == "-" or (prompt is None and not sys.stdin.isatty()):
        prompt = sys.stdin.read()
    root = (workdir or Path.cwd()).resolve()
    if not root.is_dir():
        usage(f"--workdir {root} is not a directory")
    if output_schema is not None and prompt is None:
        usage("--output-schema needs a headless run: -p TASK")
    if patch is not None and (prompt is None or attempts is not None):
        usage("--patch needs a headless run of one attempt: -p TASK (kimi diff prints any session's change)")
    visual = _visual(visual_check, visual_target, visual_size, root, prompt is not None)
    if fork is not None:
        resume, continue_ = _fork(root, fork), False
    if attempts is not None:
        raise SystemExit(_attempts(root, prompt, attempts, check, output_format, max_tokens, worktree))
    tree = _worktree(root, worktree) if worktree is not None else None
    if tree is None and resume not in (None, PICK) and fork is None:
        tree = _session_worktree(root, str(resume))  # a session of one of this repository's worktrees
    if tree is not None:
        root = tree.path
    if prompt is None:
        from kimi_cli.agent.bootstrap import SessionChoice
        from kimi_cli.frontends.terminal.session import run_interactive

        def first_run() -> bool:  # no provider set up: `kimi login`'s flow in place, then the session
            from kimi_cli.cli.login import first_run as login_in_place

            return login_in_place(flags)

        code = run_interactive(root, flags, SessionChoice("interactive", continue_, resume), first_run)
        raise SystemExit(_left_worktree(tree, code))
    opts = RunOptions(
        prompt=prompt,
        workdir=root,
        output_format=output_format,  # type: ignore[arg-type]
        images=list(image or []),
        continue_latest=continue_,
        resume_id=resume,
        branch=branch,
        config_flags=flags,
        output_schema=str(output_schema) if output_schema is not None else None,
        visual=visual,
        check=check,
        patch=patch,
    )
    raise SystemExit(_left_worktree(tree, run_headless(opts)))


def _attempts(root: Path, prompt: str | None, n: int, check: str | None, output_format: str,
              max_tokens: int | None, worktree: str | None) -> int:  # fmt: skip
    """--attempts N (kimi_cli.frontends.headless.attempts), its flags checked first."""
    from kimi_cli.frontends.headless.attempts import MAX_ATTEMPTS, run_attempts_headless

    if prompt is None:
        usage("--attempts needs a headless run: -p TASK")
    if check is None:
        usage("--attempts needs --check COMMAND: it says which attempt passed")
    if not 1 <= n <= MAX_ATTEMPTS:
        usage(f"--attempts must be between 1 and {MAX_ATTEMPTS}")
    if worktree is not None:
        usage("--attempts makes a worktree per attempt: leave out --worktree")
    assert prompt is not None and check is not None
    return run_attempts_headless(root, prompt, n, check, sys.argv[1:], output_format, max_tokens)


def _worktree(root: Path, name: str) -> Any:
    """--worktree [NAME]: the worktree (made now, or the existing one of that name) the session runs in."""
    from kimi_cli.errors import KimiError
    from kimi_cli.worktrees.trees import create

    try:
        tree = create(root, None if name == AUTO_NAME else name)
    except KimiError as exc:
        usage(str(exc))
        raise
    _say(f"kimi: in worktree {tree.path} (branch {tree.branch})", err=True)
    return tree


def _session_worktree(root: Path, session_id: str) -> Any:
    """The kimi worktree whose session `--resume ID` names, when it is not a session of `root` itself."""
    from kimi_cli.errors import KimiError
    from kimi_cli.session.store import resolve_id

    try:
        resolve_id(root, session_id)
        return None
    except KimiError:
        pass
    from kimi_cli.worktrees.trees import list_worktrees

    try:
        candidates = list_worktrees(root)
    except KimiError:
        return None
    for tree in candidates:
        try:
            resolve_id(tree.path, session_id)
        except KimiError:
            continue
        _say(f"kimi: session {session_id} is in worktree {tree.name}: resuming it in {tree.path}", err=True)
        return tree
    return None


def _left_worktree(tree: Any, code: int) -> int:
    """The line a session in a worktree ends with: its branch, commits, and how to merge or remove it."""
    if tree is not None:
        from kimi_cli.errors import KimiError
        from kimi_cli.util.sanitize import visible
        from kimi_cli.worktrees.trees import exit_line

        try:
            _say(f"kimi: {visible(exit_line(tree.path, tree))}", err=True)
        except KimiError as exc:
            _say(f"kimi: worktree {tree.name}: {visible(str(exc))}", err=True)
    return code


def _visual(target: str | None, ssim: float | None, size: str | None, root: Path, headless: bool) -> Any:
    """--visual-check and its options, checked before any work (kimi_cli.frontends.headless.visual)."""
    if target is None and ssim is None and size is None:
        return None
    from kimi_cli.errors import KimiError
    from kimi_cli.frontends.headless.visual import parse_visual

    if not headless:
        usage("--visual-check needs a headless run: -p TASK")
    try:
        return parse_visual(target, ssim, size, root)
    except KimiError as exc:
        usage(str(exc))


def _fork(root: Path, session_id: str) -> str:
    """`--fork ID`: copy the session, then run in the copy; the original stays as it was."""
    from kimi_cli.errors import KimiError
    from kimi_cli.session.fork import fork_session

    try:
        new_id = fork_session(root, session_id)
    except KimiError as exc:
        usage(str(exc))
        raise
    _say(f"kimi: forked session {session_id} as {new_id}", err=True)
    return new_id
