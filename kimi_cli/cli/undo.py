"""`kimi undo [N] [--list]`: put files back as they were before your last prompt, and cut the conversation
there (or go back to before undo point N; --list shows the points)."""

from __future__ import annotations

import sys
from pathlib import Path

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.session.store import Session
from kimi_cli.session.undo.points import apply_undo, describe_failures, describe_points, plan_undo, undo_state
from kimi_cli.session.undo.shadow import CheckpointError, FileChange, ShadowRepo
from kimi_cli.util.pipes import survives_closed_pipe

VERBS = {"A": "restore", "D": "delete", "M": "rewrite"}


def _say(text: str) -> None:
    """File names and prompts are untrusted: printed with escapes made visible."""
    from kimi_cli.util.sanitize import visible

    print(visible(text))


def _err(text: str) -> None:
    from kimi_cli.util.sanitize import visible

    sys.stderr.write(visible(text) + "\n")


def _describe(changes: list[FileChange]) -> str:
    return "\n".join(f"  {VERBS.get(c.status, c.status)} {c.path}" for c in changes) or "  (no file changes)"


def _open(workdir: Path, session_id: str | None) -> Session:
    if session_id:
        return Session.open(workdir, session_id)
    from kimi_cli.session.store import list_sessions

    if not list_sessions(workdir):
        raise KimiError("nothing to undo: no session in this workspace yet", ExitCode.USAGE)
    return Session.latest(workdir)


def list_points(workdir: Path, session_id: str | None) -> int:
    try:
        session = _open(workdir, session_id)
    except KimiError as exc:
        _err(f"kimi: {exc}")
        return int(exc.exit_code)
    try:
        state = undo_state(session.records())
        if not state.points:
            _say(f"session {session.id} has no undo points: none of its steps changed a file")
            if state.failures:  # or its snapshots failed: say so, never silently
                _say(f"{len(state.failures)} snapshot(s) failed:\n" + "\n".join(describe_failures(state)))
            return 0
        _say(f"undo points of session {session.id}, newest last (`kimi undo N` goes back to before point N):")
        _say("\n".join(describe_points(ShadowRepo(workdir), state)))
    except CheckpointError as exc:
        _err(f"kimi: {exc}")
        return int(ExitCode.ERROR)
    finally:
        session.close()
    return 0


def run_undo(workdir: Path, count: int | None, session_id: str | None, yes: bool) -> int:
    try:
        session = _open(workdir, session_id)
    except KimiError as exc:
        _err(f"kimi: {exc}")
        return int(exc.exit_code)
    shadow = ShadowRepo(workdir)
    try:
        plan = plan_undo(shadow, session, count)
        _say(f"undo in session {session.id}: back to {plan.target.where()}")
        _say(_describe(plan.changes))
        for path, size in plan.not_covered:
            _say(f"  not covered (too large to snapshot, left as it is): {path}, {size / 1e6:.0f} MB")
        if plan.user_edits:
            _say("these files were changed after the agent's last step; undo would overwrite them:")
            _say("\n".join(f"  {c.path}" for c in plan.user_edits))
            if not yes and not _confirm("overwrite them?"):
                _err("kimi: undo refused: your edits would be lost; pass --yes to overwrite them")
                return int(ExitCode.CANCELLED)
        changes = apply_undo(shadow, session, plan)
    except CheckpointError as exc:
        _err(f"kimi: undo failed: {exc}")
        return int(ExitCode.ERROR)
    finally:
        session.close()
    where = plan.target.where()
    for path, reason in shadow.last_not_restored:
        _say(f"  not restored: {path} ({reason})")
    _say(f"restored {len(changes) - len(shadow.last_not_restored)} file(s); the conversation now ends {where}.")
    _say(f"resume the conversation with: kimi --resume {session.id}")
    return 0


@survives_closed_pipe
def cli_main(argv: list[str]) -> int | None:
    """`kimi undo` without Typer and pydantic: argparse reads the options kimi_cli/cli/subcommands.py declares.
    None: help was asked or the arguments do not parse, and Typer answers (one help style)."""
    import argparse

    parser = argparse.ArgumentParser(prog="kimi undo", add_help=False, exit_on_error=False)
    parser.add_argument("count", nargs="?", type=int, default=None)
    parser.add_argument("-l", "--list", action="store_true")
    parser.add_argument("--session")
    parser.add_argument("-y", "--yes", action="store_true")
    parser.add_argument("-w", "--workdir", type=Path)
    try:
        args, extra = parser.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return None
    if extra:
        return None
    return run_from_options(args.count, args.list, args.session, args.yes, args.workdir)


def run_from_options(count: int | None, list_: bool, session_id: str | None, yes: bool, workdir: Path | None) -> int:
    root = (workdir or Path.cwd()).resolve()
    if list_:
        return list_points(root, session_id)
    return run_undo(root, count, session_id, yes)


def _confirm(question: str) -> bool:
    """One key, no Enter (Enter = the shown default, no); never asked of a pipe."""
    if not sys.stdin.isatty():
        return False
    from kimi_cli.frontends.terminal.keys import ask_key

    try:
        return ask_key(f"{question} y/N (Enter = no) › ", "yn", "n") == "y"
    except (KeyboardInterrupt, EOFError):
        return False
