"""The hidden-path table (hidden_paths.txt, one data file for every backend) and its expansion.

Each entry is a path or a glob; `~` is every home the user has (`homes`: the one commands see, $HOME, and
the password database's for kimi's uid: a CI runner, a wrapper or `sudo -E` points HOME elsewhere and
leaves the real one, its .ssh with it, where it was); an entry under ~/.config, ~/.local/share,
~/.local/state or ~/.cache is also hidden where XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME or
XDG_CACHE_HOME put that folder; `$NAME` is the file or folder that environment variable of kimi's names
(GOOGLE_APPLICATION_CREDENTIALS, KUBECONFIG: a credential file may live anywhere). Only what exists is
returned by `expand`: bwrap needs a target to mount over, and Landlock only needs to know what not to
grant. `patterns` keeps the rest: bwrap looks again before each command, and Landlock never grants the
folder a home entry would appear in (`home_roots`), so a credential made later stays hidden.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from kimi_cli.kernel.contain import below, below_normal, normal

TABLE = Path(__file__).with_name("hidden_paths.txt")
MAGIC = "*?["
# Never hidden through a variable, whatever it says: a folder this near the root holds the system itself.
MIN_PARTS = 3  # "/", a top folder, a name: /etc/krb5.keytab yes, /etc no
# Where the XDG base folders are by default, and the variable that moves each.
XDG = (("~/.config", "XDG_CONFIG_HOME"), ("~/.local/share", "XDG_DATA_HOME"), ("~/.local/state", "XDG_STATE_HOME"),
       ("~/.cache", "XDG_CACHE_HOME"))  # fmt: skip


def real_home() -> Path | None:
    """The password database's home for kimi's uid (what HOME says does not move the user's files)."""
    import pwd

    try:
        found = pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):
        return None
    return Path(found) if found.startswith("/") else None


def homes(home: Path) -> list[Path]:
    """The homes a `~` entry is hidden under: the one commands see, and the real one. Never the root folder
    (a system user's home can be `/`: its entries would be /.ssh, and Landlock would split the whole tree)."""
    out: list[Path] = []
    for found in (home, real_home()):
        if found is not None and len(found.parts) > 1 and found not in out:
            out.append(found)
    return out


def _absolute(value: str, rest: str) -> str:
    """value/rest when value is absolute and the result is not a system folder itself, else ''."""
    path = os.path.normpath(value + ("/" + rest if rest else "")) if value.startswith("/") else ""
    return path if path and len(Path(path).parts) >= MIN_PARTS else ""


def home_roots(home: Path | Iterable[Path], environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders home entries are found under: the homes and the XDG folders that the variables move."""
    environ = os.environ if environ is None else environ
    roots = [home] if isinstance(home, Path) else list(home)
    for _default, name in XDG:
        value = environ.get(name) or ""
        moved = Path(os.path.normpath(value)) if value.startswith("/") else None
        if moved is not None and len(moved.parts) > 1 and moved not in roots:
            roots.append(moved)
    return roots


@lru_cache(maxsize=1)
def default_entries() -> tuple[str, ...]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def patterns(
    entries: list[str] | tuple[str, ...], home: Path | Iterable[Path], environ: Mapping[str, str] | None = None
) -> list[str]:
    """Absolute paths or globs: `~` made each home, an XDG folder's entry also made where its variable points,
    `$NAME` made the value (several for a PATH-like list, a krb5 `FILE:` prefix dropped); an unset variable
    or a relative value gives nothing."""
    environ = os.environ if environ is None else environ
    all_homes = [home] if isinstance(home, Path) else list(home)
    out: list[str] = []

    def add(path: str) -> None:
        if path and path not in out:
            out.append(path)

    for raw in entries:
        if raw == "~" or raw.startswith("~/"):
            for each in all_homes:
                add(str(each) + raw[1:])
            for default, name in XDG:
                rel = below(default, raw)
                if rel:
                    add(_absolute(environ.get(name) or "", rel))
        elif raw.startswith("$"):
            name, _, rest = raw[1:].partition("/")
            for value in (environ.get(name) or "").split(os.pathsep):
                add(_absolute(value.split(":", 1)[1] if value.startswith(("FILE:", "DIR:")) else value, rest))
        else:
            add(raw)
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


def expand(
    entries: list[str] | tuple[str, ...], home: Path | Iterable[Path], environ: Mapping[str, str] | None = None
) -> list[Path]:
    """The existing paths the entries name (see `patterns` and `existing`)."""
    return existing(patterns(entries, home, environ))


def not_yet(found_patterns: list[str] | tuple[str, ...], roots: Path | Iterable[Path]) -> list[str]:
    """Patterns under the home roots (`home_roots`) that nothing matches yet, and every such glob: Landlock
    splits the folders they would appear in (never granting them whole), so a ~/.config/gh made during the
    session is not readable."""
    homes = [normal(home) for home in ([roots] if isinstance(roots, Path) else roots)]
    magic = [p for p in found_patterns if any(c in p for c in MAGIC)]
    below_a_home = [p for p in found_patterns if any(below_normal(home, normal(p)) for home in homes)]  # "": a home
    return [p for p in below_a_home if p in magic or not os.path.lexists(p)]
