"""Saving an allow rule for later sessions: into the workspace's own `.kimi/config.toml`, and nowhere else.

The file is edited as TOML (tomlkit: comments, layout and multi-line arrays stay as the user wrote them) and
written through kimi_cli.hostsafe.fs: every folder opened from the workspace's descriptor without following
a link, the file replaced by the one atomic write. A link on the way (`.kimi` or `config.toml` itself, which
a repository may ship pointing anywhere) refuses with a message, as does a file that is not valid TOML:
nothing is written then. A sandbox whose guard keeps `.kimi` as the session found it is told the new file
is kimi's own (`accept`), so the next command neither undoes it nor is blamed for it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

CONFIG = ".kimi/config.toml"
MAX_BYTES = 4 << 20  # the settings reader's bound (kimi_cli.hostsafe.settings_read)


class RuleNotSaved(Exception):
    """Why a rule could not be saved (it still applies for this session)."""


def save_allow_rule(workspace: Path, rule: str, accept: Callable[[str, bytes], None] | None = None) -> bool:
    """Add `rule` to [approval].allow in the workspace's .kimi/config.toml; False when it is there already.
    Raises RuleNotSaved with the reason. The user's own rule keeps a trusted folder trusted
    (kimi_cli.hostsafe.trust.note_own_allow_rule)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from kimi_cli.hostsafe import fs as safe_fs
    from kimi_cli.hostsafe import trust

    try:
        root_fd = safe_fs.open_root(workspace)
    except OSError as exc:
        raise RuleNotSaved(f"the workspace {workspace} cannot be opened ({exc.strerror or exc})") from None
    try:
        text = _current_text(root_fd)
        try:
            doc = tomlkit.parse(text)
        except TOMLKitError as exc:
            raise RuleNotSaved(f"{CONFIG} is not valid TOML ({exc}); it was left as it is") from None
        approval = doc.get("approval")
        if approval is None:
            approval = tomlkit.table()
            doc["approval"] = approval
        if not isinstance(approval, dict):
            raise RuleNotSaved(f"`approval` in {CONFIG} is not a table; it was left as it is")
        allow = approval.get("allow")
        if allow is None:
            allow = tomlkit.array()
            approval["allow"] = allow
        if not isinstance(allow, list):
            raise RuleNotSaved(f"`approval.allow` in {CONFIG} is not a list; it was left as it is")
        if rule in allow:
            return False
        before = trust.current(workspace)
        allow.append(rule)
        data = tomlkit.dumps(doc).encode()
        try:
            safe_fs.write_atomic_at(root_fd, CONFIG, data, new_mode=0o644)
        except OSError as exc:
            raise RuleNotSaved(_why(exc)) from None
        if accept is not None:
            accept(CONFIG, data)
        trust.note_own_allow_rule(workspace, before, rule)
        return True
    finally:
        os.close(root_fd)


def _current_text(root_fd: int) -> str:
    """The file's text ("" when there is none yet), read without following a link; a link, or anything
    but a regular file, at `.kimi` or at the file refuses."""
    from kimi_cli.hostsafe import fs as safe_fs

    for rel in (".kimi", CONFIG):
        try:
            st = safe_fs.lstat_at(root_fd, rel)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise RuleNotSaved(_why(exc)) from None
        if stat.S_ISLNK(st.st_mode):
            raise RuleNotSaved(f"{rel} is a link (to {_target(root_fd, rel)}); kimi saves rules only in the "
                               "workspace's own .kimi folder, never through a link")  # fmt: skip
        wanted = stat.S_ISDIR if rel == ".kimi" else stat.S_ISREG
        if not wanted(st.st_mode):
            raise RuleNotSaved(f"{rel} is not a {'folder' if rel == '.kimi' else 'regular file'}")
    try:
        data, _st = safe_fs.read_at(root_fd, CONFIG, MAX_BYTES + 1)
    except OSError as exc:
        raise RuleNotSaved(_why(exc)) from None
    if len(data) > MAX_BYTES:
        raise RuleNotSaved(f"{CONFIG} is larger than {MAX_BYTES >> 20} MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RuleNotSaved(f"{CONFIG} is not UTF-8 text; it was left as it is") from None


def _target(root_fd: int, rel: str) -> str:
    from kimi_cli.hostsafe import fs as safe_fs

    try:
        return safe_fs.readlink_at(root_fd, rel)
    except OSError:
        return "somewhere"


def _why(exc: OSError) -> str:
    from kimi_cli.hostsafe.fs import UnsafePath

    if isinstance(exc, UnsafePath) or exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
        return f"a link is on the way to {CONFIG}; kimi saves rules only in the workspace's own .kimi folder"
    return f"{CONFIG} could not be written ({exc.strerror or exc})"
