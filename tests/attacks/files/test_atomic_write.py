"""One atomic write (kimi_cli.hostsafe.fs.replace_in): a name no one can guess, O_EXCL, fsync, a rename within
the parent folder's descriptor. Every file kimi replaces whole goes through it: the file tools, undo, the
sandbox's guard and kimi's own private files (sessions, trust, config, caches).

The copy kimi's private files used (write_private, then in util/paths.py) wrote `.NAME.<pid>.tmp` with O_TRUNC
and no O_EXCL or O_NOFOLLOW: a link waiting at that name had kimi write the file's content through it, over
whatever it pointed at, and then the link itself was renamed into the file's place. Beside it: the file is
written whole with the modes each caller keeps (0600 for kimi's own, the old mode for an edited file), in a
kimi home reached through a link of the user's, and a write that fails leaves the old file as it was.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from kimi_cli.hostsafe import fs as safe_fs

from support import ROOT_DIR


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".kimi-tmp" in p.name or p.name.endswith(".tmp"))


def test_a_link_at_the_old_temp_name_is_never_written_through(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "kimi-home", tmp_path / "precious.txt"
    home.mkdir(mode=0o700)
    elsewhere.write_text("the user's own file\n")
    target = home / "trusted.json"
    (home / f".trusted.json.{os.getpid()}.tmp").symlink_to(elsewhere)  # the name the old copy always used
    safe_fs.write_private(target, '{"version": 1}\n')
    assert elsewhere.read_text() == "the user's own file\n"
    assert not target.is_symlink() and target.read_text() == '{"version": 1}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_kimis_own_files_are_written_whole_and_private_through_a_linked_home(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "kimi"
    real.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".kimi").symlink_to(real)  # the user's own link: their word, followed
    target = tmp_path / "home" / ".kimi" / "sessions" / "s1" / "meta.json"
    for text in ("first\n", "second, longer than the first\n", "3\n"):
        safe_fs.write_private(target, text)
        assert (real / "sessions" / "s1" / "meta.json").read_text() == text
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((real / "sessions").stat().st_mode) == 0o700
    assert leftovers(target.parent) == []


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)

    def fail() -> None:
        raise OSError(28, "No space left on device")

    try:
        with pytest.raises(OSError, match="No space"):
            safe_fs.replace_in(fd, "f.txt", b"new\n", before_rename=fail)
    finally:
        os.close(fd)
    assert (tmp_path / "f.txt").read_text() == "old\n" and leftovers(tmp_path) == []


def test_an_edited_file_keeps_its_mode_and_a_link_in_its_place_is_replaced(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    (ws / "script.sh").write_text("echo old\n")
    (ws / "script.sh").chmod(0o750)
    outside.write_text("outside\n")
    (ws / "swapped.txt").symlink_to(outside)  # a command swapped the file for a link after the resolve
    with safe_fs.rooted(ws) as root_fd:
        safe_fs.write_atomic_at(root_fd, "script.sh", b"echo new\n")
        safe_fs.write_atomic_at(root_fd, "swapped.txt", b"mine\n")
        safe_fs.write_atomic_at(root_fd, "new/deep/file.txt", b"made\n")
    assert stat.S_IMODE((ws / "script.sh").stat().st_mode) == 0o750
    assert (ws / "script.sh").read_text() == "echo new\n"
    assert outside.read_text() == "outside\n" and not (ws / "swapped.txt").is_symlink()
    assert (ws / "new" / "deep" / "file.txt").read_text() == "made\n"
    assert leftovers(ws) == []


# A rename that is no write of a file's content: the guard's removal pulls a folder's entries up into it to
# empty it without recursion; the MCP stderr log is moved aside to rotate it.
NOT_A_WRITE = {"kimi_cli/sandbox/guard/restore.py": 1, "kimi_cli/extensions/mcp/stderr_log.py": 1}
RENAME = re.compile(r"\bos\.(rename|replace|renames)\(|\.replace\((tmp|temp)|\.rename\(")


def test_every_file_replaced_whole_goes_through_the_one_atomic_write() -> None:
    found: dict[str, int] = {}
    for top in ("kimi_cli", "tools", "engine"):
        for path in (ROOT_DIR / top).rglob("*.py"):
            count = len(RENAME.findall(path.read_text()))
            if count:
                found[str(path.relative_to(ROOT_DIR))] = count
    assert found == {"kimi_cli/hostsafe/fs.py": 1, **NOT_A_WRITE}
