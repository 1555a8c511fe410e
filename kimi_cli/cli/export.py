"""`kimi export [ID] --format md|json|html [-o FILE]` and the listing side of `kimi sessions`
(`--all`, `--prune [--older-than DAYS]`, `--open ID`). Declared with Typer in kimi_cli/cli/subcommands.py.

An export goes to stdout unless `-o` names a file; on a terminal, Markdown and JSON are printed with their
control characters made visible, and HTML is written to ~/.kimi/exports/ instead (a page is not for
reading raw). Files are written 0600 and atomically (never through a link at that name).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.util.sanitize import visible


def run_export(session: str | None, fmt: str, output: Path | None, workdir: Path | None) -> int:
    from kimi_cli.session.export import FORMATS, default_path, export_text, find_session, write_export

    if fmt not in FORMATS:
        _err(f"--format must be md, json or html, not {fmt!r}")
        return int(ExitCode.USAGE)
    workspace = (workdir or Path.cwd()).resolve()
    try:
        folder = find_session(workspace, session)
        text = export_text(folder, fmt)
    except KimiError as exc:
        _err(str(exc))
        return int(exc.exit_code)
    if output is None and fmt == "html" and sys.stdout.isatty():
        output = default_path(folder.name, fmt)
    if output is None:
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
        sys.stdout.flush()
        return 0
    try:
        write_export(output, text)
    except OSError as exc:
        _err(f"cannot write {output}: {exc.strerror or exc}")
        return int(ExitCode.ERROR)
    typer.echo(visible(f"exported session {folder.name} to {output}"), err=True)
    return 0


def run_sessions(workdir: Path | None, show_all: bool, prune: bool, older_than: float, open_id: str | None) -> int:
    workspace = (workdir or Path.cwd()).resolve()
    if open_id is not None:
        return open_session_page(workspace, open_id)
    if prune:
        return prune_sessions(workspace, older_than)
    from kimi_cli.frontends.session_list import hidden_note, rows, visible_sessions
    from kimi_cli.session.store import list_sessions

    infos, hidden = visible_sessions(list_sessions(workspace), show_all)
    if not infos:
        typer.echo("no sessions in this workspace yet" if not hidden else "no sessions to list")
    for line in rows(infos):
        typer.echo(visible(line[:200], one_line=True))
    if hidden:
        typer.echo(hidden_note(hidden), err=True)
    return 0


def prune_sessions(workspace: Path, older_than: float) -> int:
    from kimi_cli.session.prune import remove, stale
    from kimi_cli.util.paths import kimi_home

    if older_than < 0:
        _err("--older-than must be 0 or more days")
        return int(ExitCode.USAGE)
    removed = remove(stale(workspace, older_than), kimi_home() / "exports")
    for sid in removed:
        typer.echo(visible(f"removed {sid}"))
    typer.echo(f"pruned {len(removed)} session{'s' if len(removed) != 1 else ''} older than {older_than:g} days",
               err=True)  # fmt: skip
    return 0


def open_session_page(workspace: Path, session: str) -> int:
    """Write the session's HTML page under ~/.kimi/exports/ and open it in a browser where one exists."""
    from kimi_cli.session.export import default_path, export_text, find_session, write_export

    try:
        folder = find_session(workspace, session)
        page = export_text(folder, "html")
    except KimiError as exc:
        _err(str(exc))
        return int(exc.exit_code)
    path = default_path(folder.name, "html")
    try:
        write_export(path, page)
    except OSError as exc:
        _err(f"cannot write {path}: {exc.strerror or exc}")
        return int(ExitCode.ERROR)
    opener = browser_opener(workspace)
    if opener is None:
        typer.echo(visible(f"wrote {path} (no browser here: open it where there is one)"))
        return 0
    subprocess.Popen([opener, str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    typer.echo(visible(f"opened {path}"))
    return 0


def browser_opener(workspace: Path) -> str | None:
    """The host's own page opener (macOS `open`, `xdg-open` under a desktop session), looked up where no
    sandboxed command can plant one; None on a machine without a display (a server, CI)."""
    from kimi_cli.hostsafe.programs import host_which

    if os.environ.get("KIMI_NO_BROWSER"):
        return None
    if sys.platform == "darwin":
        return host_which("open", exclude=[workspace])
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    return host_which("xdg-open", exclude=[workspace])


def _err(message: str) -> None:
    typer.echo(f"kimi: {visible(message)}", err=True)
