"""`kimi --help` from a cache of its rendered bytes (issue 47: Typer and rich cost ~0.3 s of CPU to render it).

Correct by construction: the key holds everything the rendering reads, so a different answer is a different key.
That is kimi's version, the command line (the program's name is in the usage), the mtime and size of every module
of kimi_cli (an editable install changes its help without a new version), Typer's and rich's own files, the Python
version, the terminal as rich sees it (for stdin, stdout and stderr: a terminal or not, and its size), and each
environment variable rich and Typer read (colour, width, encoding). A miss renders with Typer as before, through a
tee that records what was written, and stores it; a failed render stores nothing. The cache lives in kimi's cache
folder (0700), written with THE atomic write, and is read without following links.
"""

from __future__ import annotations

import hashlib
import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

# What rich's Console and Typer's help formatter read from the environment.
ENVIRONMENT = (
    "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES",
    "TERMINAL_WIDTH", "_TYPER_FORCE_DISABLE_TERMINAL", "TYPER_USE_RICH", "_TYPER_STANDARD_TRACEBACK", "LANG",
    "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8", "JPY_PARENT_PID", "VSCODE_VERBOSE_LOGGING",
    "DATABRICKS_RUNTIME_VERSION", "GITHUB_ACTIONS", "CI", "_KIMI_HELP_CACHE",
)  # fmt: skip
HELP_ARGS = (["--help"], ["-h"])


def _stamp(path: str | Path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_mtime_ns}:{st.st_size}"


def _package_files(name: str) -> list[str]:
    spec = find_spec(name)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    out: list[str] = []
    for folder in folders:
        try:
            out += [_stamp(entry.path) for entry in sorted(os.scandir(folder), key=lambda e: e.name)
                    if entry.name.endswith(".py")]  # fmt: skip
        except OSError:
            out.append(f"{folder}:-")
    return out


def _tree(folder: Path) -> list[str]:
    """Every module of kimi's package, stamped: help text may come from any module the commands import (the
    engine's subcommand lives in kimi_cli/engine/), and ~400 stats cost ~2 ms."""
    out: list[str] = []
    pending = [str(folder)]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            out.append(f"{current}:-")
            continue
        for entry in entries:
            if entry.name.endswith(".py") or entry.name.endswith(".toml"):
                out.append(_stamp(entry.path))
            elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return out


def _terminal() -> list[str]:
    out: list[str] = []
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
            out.append(f"{fd}:tty:{size.columns}x{size.lines}")
        except OSError:
            out.append(f"{fd}:{os.isatty(fd) if fd >= 0 else False}")
    return out


def key(argv: list[str]) -> str:
    from kimi_cli import __version__

    here = Path(__file__).resolve().parent
    # the program's name is in the usage line: `kimi`, or `python -m kimi_cli` (Click reads sys.argv[0] and how
    # the interpreter was started)
    parts = [__version__, sys.version, repr(argv), repr(sys.orig_argv), sys.argv[0], sys.executable, *_terminal()]
    parts += [f"{name}={os.environ.get(name)!r}" for name in ENVIRONMENT]
    parts += _tree(here.parent)
    parts += _package_files("typer") + _package_files("rich")
    return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def _folder() -> Path:
    from kimi_cli.util.paths import cache_dir

    return cache_dir() / "help"


def show(argv: list[str]) -> bool:
    """Write the cached help for `argv` and return True, or False where there is none (the caller renders)."""
    if os.environ.get("_KIMI_HELP_CACHE") == "off":
        return False
    from kimi_cli.hostsafe import fs as safe_fs

    try:
        data = safe_fs.read_bytes(_folder(), key(argv), 1 << 20)
    except (OSError, ValueError):
        return False
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:  # `kimi --help | head -1`: the reader left, as after Typer's own help
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return True


class _Tee:
    """sys.stdout as it is, plus a record of what was written through it (rich asks it isatty and fileno)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.written: list[bytes] = []

    def write(self, text: str | bytes) -> int:
        encoded = text if isinstance(text, bytes) else text.encode(self._real.encoding or "utf-8", "replace")
        self.written.append(encoded)
        return int(self._real.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def render_and_store(argv: list[str], render: Any) -> None:
    """Run `render()` (Typer's help: it exits 0) with stdout recorded; the bytes are stored for the next run."""
    name = key(argv)
    real = sys.stdout
    tee = _Tee(real)
    sys.stdout = tee
    code: object = None
    try:
        render()
    except SystemExit as exc:
        code = exc.code
        raise
    finally:
        sys.stdout = real
        if code in (None, 0) and tee.written and os.environ.get("_KIMI_HELP_CACHE") != "off":
            _store(name, b"".join(tee.written))


def _store(name: str, data: bytes) -> None:
    from kimi_cli.hostsafe.fs import rooted, write_atomic_at

    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with rooted(folder) as fd:
            write_atomic_at(fd, name, data, new_mode=0o600, keep_mode=False)
    except (OSError, ValueError):
        pass  # no cache: the next --help renders again
