"""`kimi undo [N]`: put the files back as they were N file-changing steps ago, and cut the conversation there."""

from __future__ import annotations

import sys
from pathlib import Path

from kimi_cli.checkpoints import CheckpointError, FileChange, ShadowRepo
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.session.checkpointing import apply_undo, plan_undo
from kimi_cli.session.store import Session

VERBS = {"A": "restore", "D": "delete", "M": "rewrite"}


def _describe(changes: list[FileChange]) -> str:
    return "\n".join(f"  {VERBS.get(c.status, c.status)} {c.path}" for c in changes) or "  (no file changes)"


def run_undo(workdir: Path, steps: int, session_id: str | None, yes: bool) -> int:
    try:
        session = Session.open(workdir, session_id) if session_id else Session.latest(workdir)
    except KimiError as exc:
        sys.stderr.write(f"kimi: {exc}\n")
        return int(exc.exit_code)
    shadow = ShadowRepo(workdir)
    try:
        plan = plan_undo(shadow, session, steps)
        print(f"undo {steps} step(s) of session {session.id}: back to before step {plan.target.step}")
        print(_describe(plan.changes))
        if plan.user_edits:
            print("these files were changed after the agent's last step; undo would overwrite them:")
            print("\n".join(f"  {c.path}" for c in plan.user_edits))
            if not yes and not _confirm("overwrite them?"):
                sys.stderr.write("kimi: undo refused: your edits would be lost; pass --yes to overwrite them\n")
                return int(ExitCode.CANCELLED)
        changes = apply_undo(shadow, session, plan)
    except CheckpointError as exc:
        sys.stderr.write(f"kimi: undo failed: {exc}\n")
        return int(ExitCode.ERROR)
    finally:
        session.close()
    print(f"restored {len(changes)} file(s); the conversation now ends before step {plan.target.step}.")
    print("continue with: kimi --continue")
    return 0


def cli_main(argv: list[str]) -> int:
    """`kimi undo`, parsed with argparse so it starts without Typer and pydantic."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="kimi undo",
        description="Restore the files as they were N agent steps ago and cut the conversation there.",
    )
    parser.add_argument("steps", nargs="?", type=int, default=1, help="how many file-changing steps to undo")
    parser.add_argument("--session", help="session id (default: the latest in this workspace)")
    parser.add_argument("-y", "--yes", action="store_true", help="overwrite files you edited since the agent")
    parser.add_argument("-w", "--workdir", type=Path, help="workspace folder")
    args = parser.parse_args(argv)
    return run_undo((args.workdir or Path.cwd()).resolve(), args.steps, args.session, args.yes)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
