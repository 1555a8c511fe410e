"""Session exports: Markdown, JSON and a self-contained HTML page of any session in ~/.kimi/sessions/.

`export_text(folder, fmt)` reads the session's folder (kimi_cli.session.export.reader), redacts it
(kimi_cli.session.export.redaction) and renders it; `find_session` finds a session's folder by id, in this
workspace first, then in any workspace's folder.
"""

from __future__ import annotations

from pathlib import Path

from kimi_cli.errors import ConfigError, KimiError
from kimi_cli.session.store import META_NAME, resolve_id
from kimi_cli.util.paths import kimi_home, sessions_dir

FORMATS = ("md", "json", "html")
SUFFIX = {"md": ".md", "json": ".json", "html": ".html"}


def export_text(folder: Path, fmt: str) -> str:
    """The export of the session in `folder` as `fmt` (md, json or html)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}: md, json or html")
    from kimi_cli.session.export.reader import load
    from kimi_cli.session.export.redaction import register_known_secrets

    register_known_secrets()
    export = load(folder)
    if fmt == "json":
        from kimi_cli.session.export.json_format import render_json

        return render_json(export)
    if fmt == "md":
        from kimi_cli.session.export.markdown import render_markdown

        return render_markdown(export)
    from kimi_cli.session.export.html import render_html

    return render_html(export)


def find_session(workspace: Path, wanted: str | None) -> Path:
    """The folder of session `wanted` (an id or its start; None: the latest here). An id not of this
    workspace is looked for in every workspace's folder; a path to a session folder is taken as it is."""
    if wanted is None:
        from kimi_cli.session.store import list_sessions

        infos = list_sessions(workspace)
        if not infos:
            raise ConfigError("no session in this workspace yet; give a session id (kimi sessions lists them)")
        return infos[0].path
    given = Path(wanted).expanduser()
    if "/" in wanted and (given / META_NAME).is_file():
        return given
    try:
        return sessions_dir(workspace) / resolve_id(workspace, wanted)
    except KimiError:
        pass
    root = kimi_home() / "sessions"
    found = sorted(p.parent for p in root.glob(f"*/{glob_escape(wanted)}*/{META_NAME}")) if root.is_dir() else []
    exact = [p for p in found if p.name == wanted]
    if len(exact) == 1 or len(found) == 1:
        return (exact or found)[0]
    if not found:
        raise ConfigError(f"no session {wanted!r} here or in any workspace; `kimi sessions --all` lists this one's")
    raise ConfigError(f"{len(found)} sessions start with {wanted!r}; give more of the id")


def glob_escape(text: str) -> str:
    import glob

    return glob.escape(text)


def default_path(session_id: str, fmt: str) -> Path:
    """Where an export goes unless told: ~/.kimi/exports/<id>.<ext> (private, like the session itself)."""
    return kimi_home() / "exports" / f"{session_id}{SUFFIX[fmt]}"


def write_export(path: Path, text: str) -> None:
    """An export written where asked, through the one atomic write: 0600, never through a link."""
    from kimi_cli.hostsafe.fs import write_private

    write_private(path.expanduser().absolute(), text)
