"""`kimi undo [N] [--list]`: put the files back as they were before the last prompt (or undo point N)."""

from __future__ import annotations

import sys
from pathlib import Path

from kimi_cli.checkpoints import CheckpointError, FileChange, ShadowRepo
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.session.checkpointing import apply_undo, describe_failures, describe_points, plan_undo, undo_state
from kimi_cli.session.store import Session

VERBS = {"A": "restore", "D": "delete", "M": "rewrite"}


def _say(text: str) -> None:
    """File names and prompts are untrusted: printed with escapes made visible."""
    from kimi_cli.ui.sanitize import visible

    print(visible(text))


def _err(text: str) -> None:
    from kimi_cli.ui.sanitize import visible

    sys.stderr.write(visible(text) + "\n")


def _describe(changes: list[FileChange]) -> str:
    return "\n".join(f"  {VERBS.get(c.status, c.status)} {c.path}" for c in changes) or "  (no file changes)"


def list_points(workdir: Path, session_id: str | None) -> int:
    try:
        session = Session.open(workdir, session_id) if session_id else Session.latest(workdir)
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


def target_text(plan_target_kind: str, label: str) -> str:
    return f'before the prompt "{label[:80]}"' if plan_target_kind == "turn" else f"before {label}"


def run_undo(workdir: Path, count: int | None, session_id: str | None, yes: bool) -> int:
    try:
        session = Session.open(workdir, session_id) if session_id else Session.latest(workdir)
    except KimiError as exc:
        _err(f"kimi: {exc}")
        return int(exc.exit_code)
    shadow = ShadowRepo(workdir)
    try:
        plan = plan_undo(shadow, session, count)
        _say(f"undo in session {session.id}: back to {target_text(plan.target.kind, plan.target.label)}")
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
    where = target_text(plan.target.kind, plan.target.label)
    for path, reason in shadow.last_not_restored:
        _say(f"  not restored: {path} ({reason})")
    _say(f"restored {len(changes) - len(shadow.last_not_restored)} file(s); the conversation now ends {where}.")
    _say("continue with: kimi --continue")
    return 0


def cli_main(argv: list[str]) -> int:
    """`kimi undo`, parsed with argparse so it starts without Typer and pydantic."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="kimi undo",
        description=(
            "Put the files back as they were before your last prompt, and cut the conversation there. "
            "With N, go back to before undo point N (counted from the newest; --list shows them)."
        ),
    )
    parser.add_argument("count", nargs="?", type=int, default=None, metavar="N", help="undo point, from the newest")
    parser.add_argument("-l", "--list", action="store_true", help="list the undo points and the files each changed")
    parser.add_argument("--session", help="session id (default: the latest in this workspace)")
    parser.add_argument("-y", "--yes", action="store_true", help="overwrite files you edited since the agent")
    parser.add_argument("-w", "--workdir", type=Path, help="workspace folder")
    args = parser.parse_args(argv)
    workdir = (args.workdir or Path.cwd()).resolve()
    if args.list:
        return list_points(workdir, args.session)
    return run_undo(workdir, args.count, args.session, args.yes)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
