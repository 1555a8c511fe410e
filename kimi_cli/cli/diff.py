"""`kimi diff [SESSION] [--stat]`: what a session changed in the workspace, as a patch (the latest session
here by default). In a pipe the patch goes out byte for byte (`kimi diff | git apply` takes it); on a
terminal its control characters are made visible (file contents are untrusted). A closed pipe
(`kimi diff | head`) ends quietly. Declared with Typer in kimi_cli/cli/subcommands.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.util.pipes import survives_closed_pipe
from kimi_cli.util.sanitize import visible


def _stat_lines(files: list[dict[str, object]]) -> list[str]:
    def count(value: object, sign: str) -> str:
        return f"{sign}{value}" if value is not None else "binary"

    return [f"{f['status']:<9} {count(f['added'], '+'):>7} {count(f['removed'], '-'):>7}  {f['path']}" for f in files]


@survives_closed_pipe
def run_diff(session_id: str | None, stat: bool, workdir: Path | None) -> int:
    from kimi_cli.session.undo.session_diff import changed_files, patch, session_records, span
    from kimi_cli.session.undo.shadow import CheckpointError, ShadowRepo

    workspace = (workdir or Path.cwd()).resolve()
    try:
        sid, records = session_records(workspace, session_id)
        where = span(records)
        shadow = ShadowRepo(workspace)
        if stat:
            files = changed_files(shadow, where)
            text = "\n".join(_stat_lines(files)) + "\n" if files else ""
            data = text.encode("utf-8", errors="surrogateescape")
        else:
            data = patch(shadow, where)
    except (KimiError, CheckpointError) as exc:
        sys.stderr.write(f"kimi: {visible(str(exc))}\n")
        return int(getattr(exc, "exit_code", ExitCode.ERROR))
    if not data:
        sys.stderr.write(f"kimi: session {sid} changed no file\n")
        return 0
    if sys.stdout.isatty():
        sys.stdout.write(visible(data.decode("utf-8", errors="replace")))
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    return 0
