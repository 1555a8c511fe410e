"""Where kimi keeps its files: ~/.kimi (or $KIMI_HOME) and the per-workspace session folders."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import IO


def kimi_home() -> Path:
    """The user's kimi folder: $KIMI_HOME, else ~/.kimi."""
    env = os.environ.get("KIMI_HOME")
    return Path(env).expanduser() if env else Path.home() / ".kimi"


def is_users_own(folder: Path) -> bool:
    """Whether `folder/.kimi` is the user's own kimi home (kimi started in the home folder): the same folder,
    by device and inode, reached from `folder` without following a link. A repository's `.kimi -> ~/.kimi`
    is a link, so that repository is a project like any other. The home's own path is the user's word, links
    in it included ($KIMI_HOME, a dotfiles link)."""
    try:
        home = os.stat(kimi_home())
        parent = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        own = os.open(".kimi", _NO_FOLLOW_DIR, dir_fd=parent)
    except OSError:  # absent, not a folder, or a link
        return False
    finally:
        os.close(parent)
    try:
        st = os.fstat(own)
    finally:
        os.close(own)
    return (st.st_dev, st.st_ino) == (home.st_dev, home.st_ino)


_NO_FOLLOW_DIR = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def workspace_key(workspace: Path) -> str:
    """A short stable name for a workspace folder, used to group its sessions."""
    real = str(workspace.resolve())
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{Path(real).name or 'root'}-{digest}"


def config_files(workspace: Path) -> list[Path]:
    """The config files that apply to a workspace, lowest precedence first."""
    return [kimi_home() / "config.toml", workspace / ".kimi" / "config.toml"]


def sessions_dir(workspace: Path) -> Path:
    return kimi_home() / "sessions" / workspace_key(workspace)


PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dirs() -> list[Path]:
    """The folders kimi keeps the user's data in: ~/.kimi (sessions, logs, checkpoints, mcp.json, trust)
    and the cache (pack states, token counts)."""
    return [kimi_home(), cache_dir()]


def cache_dir() -> Path:
    """kimi's cache: $XDG_CACHE_HOME/kimi, else ~/.cache/kimi."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "kimi"


def secure_home() -> None:
    """Make kimi's folders private, cheaply enough for every start: each folder is created 0700 when
    missing, tightened to 0700 when not, and the entries directly inside it are tightened (folders 0700,
    files 0600). Nothing deeper is walked; a 0700 folder already keeps everything below it private."""
    for base in private_dirs():
        try:
            make_private_dir(base)
            _tighten(base, PRIVATE_DIR)
            with os.scandir(base) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        _tighten(Path(entry.path), PRIVATE_DIR)
                    elif entry.is_file(follow_symlinks=False):
                        _tighten(Path(entry.path), PRIVATE_FILE)
        except OSError:
            continue  # a read-only or foreign home: kimi still runs


def _tighten(path: Path, mode: int) -> None:
    try:
        st = os.lstat(path)
        if st.st_mode & 0o777 & ~mode and st.st_uid == os.getuid():
            os.chmod(path, (st.st_mode & 0o777) & mode)
    except OSError:
        pass


def make_private_dir(path: Path) -> Path:
    """mkdir -p where every folder it creates is 0700 (Path.mkdir gives parents the umask's mode)."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, PRIVATE_DIR)
    return path


def open_private(path: Path, mode: str = "a") -> IO[str]:
    """A text file opened for writing that is created 0600 (never world-readable, even for a moment)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags, PRIVATE_FILE)
    return os.fdopen(fd, mode, encoding="utf-8")
