"""The hidden-path table (hidden_paths.txt, one data file for every backend) and its expansion.

Each entry is a path or a glob; `~` is the home the command sees; `$NAME` is the file or folder that
environment variable of kimi's names (GOOGLE_APPLICATION_CREDENTIALS, KUBECONFIG: a credential file may
live anywhere). Only what exists is returned by `expand`: bwrap needs a target to mount over, and Landlock
only needs to know what not to grant. `patterns` keeps the rest: bwrap looks again before each command, and
Landlock never grants the folder a home entry would appear in, so a credential made later stays hidden.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("hidden_paths.txt")
MAGIC = "*?["
# Never hidden through a variable, whatever it says: a folder this near the root holds the system itself.
MIN_PARTS = 3  # "/", a top folder, a name: /etc/krb5.keytab yes, /etc no


@lru_cache(maxsize=1)
def default_entries() -> tuple[str, ...]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def patterns(entries: list[str] | tuple[str, ...], home: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """Absolute paths or globs: `~` made the home, `$NAME` made the value (several for a PATH-like list,
    a krb5 `FILE:` prefix dropped); an unset variable or a relative value gives nothing."""
    environ = os.environ if environ is None else environ
    out: list[str] = []
    for raw in entries:
        if raw == "~" or raw.startswith("~/"):
            out.append(str(home) + raw[1:])
        elif raw.startswith("$"):
            name, _, rest = raw[1:].partition("/")
            for value in (environ.get(name) or "").split(os.pathsep):
                value = value.split(":", 1)[1] if value.startswith(("FILE:", "DIR:")) else value
                path = os.path.normpath(value + ("/" + rest if rest else "")) if value.startswith("/") else ""
                if path and len(Path(path).parts) >= MIN_PARTS:
                    out.append(path)
        else:
            out.append(raw)
    return out


def existing(found_patterns: list[str] | tuple[str, ...]) -> list[Path]:
    """The existing paths the patterns name, symlinks resolved (a dotfiles link hides its target)."""
    found: dict[str, Path] = {}
    for entry in found_patterns:
        magic = any(c in entry for c in MAGIC)
        matches = glob.glob(entry, include_hidden=True) if magic else [entry] if os.path.lexists(entry) else []
        for match in matches:
            path = Path(os.path.realpath(match)) if os.path.islink(match) else Path(match)
            if path.exists():
                found.setdefault(str(path), path)
    return list(found.values())


def expand(entries: list[str] | tuple[str, ...], home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The existing paths the entries name (see `patterns` and `existing`)."""
    return existing(patterns(entries, home, environ))


def not_yet(found_patterns: list[str] | tuple[str, ...], home: Path) -> list[str]:
    """Home patterns nothing matches yet, and every home glob: Landlock splits the folders they would appear
    in (never granting them whole), so a ~/.config/gh made during the session is not readable."""
    prefix = str(home).rstrip("/") + "/"
    magic = [p for p in found_patterns if any(c in p for c in MAGIC)]
    return [p for p in found_patterns if p.startswith(prefix) and (p in magic or not os.path.lexists(p))]
