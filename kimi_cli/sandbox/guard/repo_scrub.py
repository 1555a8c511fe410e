"""A repository a command made or changed keeps nothing that runs a program when the user's git reads it.

The sandbox keeps the workspace's own `.git` read-only (restore.py), but a command may make a repository
anywhere else in the workspace: `git init` in a plain folder, a nested one in a subfolder, a `.git` file
pointing at a git dir it built. kimi's Git tool never runs what such a repository names, but the user's
own `git status` there would: `core.fsmonitor`, hooks, filters, pagers, aliases with `!`... So after each
command, for every git dir the command made or changed (repo_watch.py finds them):

- config and config.worktree lose each entry that names a program (hostsafe.git.repo_guard.names_program) and that
  was not there when the session started. Entries are read by git itself (`git config --file - --list`, no
  include followed, no program run), so nothing is read differently from the user's git; the file is
  rewritten from what is kept and read back by git to check it. A config git cannot read is left: git
  refuses it too. `include.path`/`includeIf` go with the rest (what they bring in is not looked at);
- hooks/ loses every hook file that was not there, as it was, at the start (`*.sample` files never run);
- a `.git` pointer or `commondir` that leads out of the workspace is removed (what it leads to is not ours
  to rewrite); one that leads inside adds that git dir to those checked, with its `worktrees/` and
  `modules/` (a submodule's status runs in it).

Everything is read and written through descriptors from the workspace root that follow no link (safe_fs).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass, field

from kimi_cli.hostsafe import fs as safe_fs
from kimi_cli.hostsafe.git.repo_guard import names_program

MAX_CONFIG_BYTES = 1 << 20  # git reads any size; a bigger config a command made is removed unread
MAX_HOOK_BYTES = 1 << 20
MAX_LINK_BYTES = 64 * 1024
MAX_MODULE_DIRS = 1_000
CONFIGS = ("config", "config.worktree")
# An interactive rebase's list: its `exec` (`x`) lines run when the user types `git rebase --continue`, which
# `git status` suggests ("interactive rebase in progress"). The sequencer's todo (cherry-pick, revert) takes
# only picks and reverts, and rebase-apply (git am) no commands: neither runs a program.
TODO = "rebase-merge/git-rebase-todo"
WATCHED = (*CONFIGS, "commondir", "hooks", "worktrees", "modules", TODO)
Entry = tuple[bytes, bytes | None]  # (key as git lists it, value; None for a bare `key` meaning true)
Stamp = tuple[object, ...]


@dataclass(frozen=True)
class Removed:
    """One thing taken out of a repository: where (its git dir or `.git` pointer), what, and its value."""

    repository: str
    setting: str
    value: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"repository": self.repository, "setting": self.setting, "value": self.value[:200]}

    def text(self) -> str:
        return f"{self.repository}: {self.setting}" + (f"={self.value[:80]}" if self.value else "")


class Unchecked(OSError):
    """git could not be run to read a config (not there, timed out): the file is checked again next time."""


def list_config(data: bytes) -> list[Entry] | None:
    """A config file's entries as git reads them (no include followed); None when git refuses the text (the
    user's git refuses it too, so it runs nothing); Unchecked when git could not be asked."""
    from kimi_cli.hostsafe.git.hardening import base_env
    from kimi_cli.hostsafe.git.host import spawn

    env = {**base_env(), "GIT_CEILING_DIRECTORIES": "/"}
    try:
        out = spawn(["git", "config", "--file", "-", "--no-includes", "--list", "-z"], env, "/", input=data,
                    timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unchecked(f"git config did not run ({type(exc).__name__})") from None
    if out.returncode != 0:
        if b"bad config" in out.stderr:
            return None
        raise Unchecked(f"git config exited {out.returncode}")
    entries: list[Entry] = []
    for item in out.stdout.split(b"\0")[:-1]:
        key, sep, value = item.partition(b"\n")
        entries.append((key, value if sep else None))
    return entries


def _quote(text: bytes, sub: bool = False) -> bytes:
    """A subsection name, or a value (as it is where git would read it the same way, else quoted)."""
    if not sub and text and text == text.strip() and not any(c in text for c in b'#;"\\\n\t\b'):
        return text
    text = text.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    if not sub:
        text = text.replace(b"\n", b"\\n").replace(b"\t", b"\\t").replace(b"\b", b"\\b")
    return b'"' + text + b'"'


def render_config(entries: list[Entry]) -> bytes:
    """A config file holding exactly `entries`, in order (a section header wherever the section changes)."""
    lines: list[bytes] = []
    current: tuple[bytes, bytes | None] | None = None
    for key, value in entries:
        section, _, rest = key.partition(b".")
        sub, dot, name = rest.rpartition(b".")
        header = (section, sub if dot else None)
        if header != current:
            lines.append(b"[" + section + (b" " + _quote(sub, sub=True) if dot else b"") + b"]")
            current = header
        lines.append(b"\t" + name + (b"" if value is None else b" = " + _quote(value)))
    return b"\n".join(lines) + b"\n" if lines else b""


def scrub_config(data: bytes, allowed: frozenset[Entry]) -> tuple[bytes | None, list[Entry]]:
    """(the new text, or None to leave the file; the entries taken out) for one config file."""
    entries = list_config(data)
    if entries is None:
        return None, []
    bad = [e for e in entries if e not in allowed and runs_program(e)]
    if not bad:
        return None, []
    kept = [e for e in entries if e in allowed or not runs_program(e)]
    text = render_config(kept)
    if list_config(text) != kept:  # never keep a text git reads otherwise than meant: keep nothing instead
        text = b""
    return text, bad


def runs_command(line: bytes) -> bool:
    """A rebase list's line that runs a program: `exec` or `x` first (git skips blanks and tabs before it;
    any letter case is taken, to be safe)."""
    words = line.split(None, 1)
    return bool(words) and words[0].lower() in (b"exec", b"x")


def runs_program(entry: Entry) -> bool:
    return names_program(_text(entry[0]), _value(entry[1]))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _identity(root_fd: int, rel: str, st: os.stat_result) -> bytes:
    """What a hook entry is: its content's digest, a link's text, or its kind."""
    if stat.S_ISREG(st.st_mode):
        if st.st_size > MAX_HOOK_BYTES:
            return b"big"
        data = safe_fs.read_at(root_fd, rel, MAX_HOOK_BYTES)[0]
        return b"file:" + hashlib.sha256(data).digest() + bytes([bool(st.st_mode & 0o111)])
    if stat.S_ISLNK(st.st_mode):
        return b"link:" + safe_fs.readlink_at(root_fd, rel).encode("utf-8", "surrogateescape")
    return b"other:" + str(stat.S_IFMT(st.st_mode)).encode()


def _lstat(root_fd: int, rel: str) -> os.stat_result | None:
    try:
        return safe_fs.lstat_at(root_fd, rel)
    except (OSError, ValueError):
        return None


def _stamp(st: os.stat_result | None) -> Stamp:
    return () if st is None else (st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_mode)


@dataclass
class GitDirState:
    """One git dir: what it held at the session's start (its baseline) and the stamps last checked.
    A git dir made during the session has an empty baseline: nothing that runs a program is kept."""

    rel: str
    start_texts: dict[str, bytes] = field(default_factory=dict)  # config file -> its text at start
    allowed: dict[str, frozenset[Entry]] = field(default_factory=dict)  # config file -> program entries at start
    hooks: dict[str, bytes] = field(default_factory=dict)  # hook entry -> identity at start
    links: dict[str, bytes] = field(default_factory=dict)  # config, config.worktree, hooks, commondir -> at start
    stamp: Stamp | None = None
    files: dict[str, Stamp] = field(default_factory=dict)  # config file -> stamp when last read
    referrers: set[str] = field(default_factory=set)  # `.git` pointers and commondir files that lead here

    def stamps(self, root_fd: int) -> Stamp:
        """Cheap: an lstat of each file that matters, and of each hook (a hook rewritten in place too)."""
        parts: list[object] = [_stamp(_lstat(root_fd, f"{self.rel}/{name}")) for name in WATCHED]
        parts += [(name, _stamp(st)) for name, st in self._hook_entries(root_fd)]
        return tuple(parts)

    def record(self, root_fd: int) -> None:
        """Take what is there now as the baseline (a git dir present when the session started)."""
        for name in (*CONFIGS, "hooks", "commondir"):
            rel = f"{self.rel}/{name}"
            st = _lstat(root_fd, rel)
            with contextlib.suppress(OSError, ValueError):
                if st is None:
                    continue
                if stat.S_ISLNK(st.st_mode) or (name == "commondir" and stat.S_ISREG(st.st_mode)):
                    self.links[name] = _link_text(root_fd, rel, st)
                elif name in CONFIGS and stat.S_ISREG(st.st_mode) and st.st_size <= MAX_CONFIG_BYTES:
                    # read by git only once it changes: a session start with many repositories spawns nothing
                    self.start_texts[name] = safe_fs.read_at(root_fd, rel, MAX_CONFIG_BYTES)[0]
                    self.files[name] = _stamp(st)
        with contextlib.suppress(OSError, ValueError):  # a rebase the user left going: its own exec lines stay
            self.start_texts[TODO] = safe_fs.read_at(root_fd, f"{self.rel}/{TODO}", MAX_CONFIG_BYTES)[0]
        for name, st in self._hook_entries(root_fd):
            with contextlib.suppress(OSError, ValueError):
                self.hooks[name] = _identity(root_fd, f"{self.rel}/hooks/{name}", st)
        self.stamp = self.stamps(root_fd)

    def check(self, root_fd: int) -> tuple[list[Removed], str | None]:
        """Take out what runs a program and was not there at the start: (what was removed, and the text of a
        new `commondir`, whose git dir the caller checks too or removes)."""
        from kimi_cli.sandbox.guard.restore import _put_file, _remove_tree

        removed: list[Removed] = []
        common: str | None = None
        unchecked = False
        # Taken before anything is read: a writer racing this check (a background task) changes what the next
        # check compares, so its change is read then. Taken after, it hid a config rewritten between our read
        # and the stamp for good (found with a lease test under load: the plant outlived the task).
        start = self.stamps(root_fd)
        for name in (*CONFIGS, "hooks", "commondir"):
            rel = f"{self.rel}/{name}"
            st = _lstat(root_fd, rel)
            try:
                if st is None or (name == "hooks" and stat.S_ISDIR(st.st_mode)):
                    continue
                if stat.S_ISLNK(st.st_mode) or (name == "commondir" and stat.S_ISREG(st.st_mode)):
                    text = _link_text(root_fd, rel, st)
                    if text == self.links.get(name):
                        continue
                    if name == "commondir" and stat.S_ISREG(st.st_mode):
                        common = _text(text).strip()
                        continue
                    _remove_tree(root_fd, rel)  # a link git would follow to a file or folder we do not check
                    removed.append(Removed(self.rel, name, f"(a link to {_text(text)[:160]})"))
                elif name not in CONFIGS:
                    continue
                elif not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
                    _remove_tree(root_fd, rel)
                    removed.append(Removed(self.rel, name, "(not a plain file)" if not stat.S_ISREG(st.st_mode)
                                           else "(over 1 MB, not read)"))  # fmt: skip
                elif self.files.get(name) != _stamp(st):
                    data = safe_fs.read_at(root_fd, rel, MAX_CONFIG_BYTES)[0]
                    try:
                        new, bad = scrub_config(data, self._allowed(name))
                    except Unchecked as exc:  # never taken as clean: reported, and read again next time
                        removed.append(Removed(self.rel, name, f"(could NOT be checked: {exc})"))
                        unchecked = True
                        continue
                    if new is not None:
                        _put_file(root_fd, rel, new, st.st_mode & 0o666)
                        removed += [Removed(self.rel, _text(k), _value(v) or "") for k, v in bad]
                        self.files.pop(name, None)  # what we wrote is read once more, unless raced meanwhile
                    else:
                        self.files[name] = _stamp(st)  # as lstat'ed before the read: a later change reads again
            except FileNotFoundError:
                continue  # gone since the lstat: nothing there to run
            except (OSError, ValueError) as exc:  # never taken as clean (see _not_checked)
                removed.append(_not_checked(self.rel, name, exc))
                unchecked = True
        try:
            removed += self._check_todo(root_fd)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            removed.append(_not_checked(self.rel, TODO, exc))
            unchecked = True
        for name, st in self._hook_entries(root_fd):
            rel = f"{self.rel}/hooks/{name}"
            try:
                if name.endswith(".sample") and stat.S_ISREG(st.st_mode):
                    continue  # git runs a hook by its exact name only
                if name not in self.hooks or self.hooks[name] != _identity(root_fd, rel, st):
                    _remove_tree(root_fd, rel)  # a new hook goes unread: nothing it holds could keep it
                    removed.append(Removed(self.rel, f"hooks/{name}"))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                removed.append(_not_checked(self.rel, f"hooks/{name}", exc))
                unchecked = True
        self.stamp = None if unchecked else start
        return removed, common

    def _check_todo(self, root_fd: int) -> list[Removed]:
        """A rebase list's `exec` lines that were not there at the start go; a list that is not a plain file
        git would read (a link, over 1 MB) goes whole. The rest of the rebase is left to the user."""
        from kimi_cli.sandbox.guard.restore import _put_file, _remove_tree

        rel = f"{self.rel}/{TODO}"
        st = _lstat(root_fd, rel)
        if st is None:
            return []
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
            _remove_tree(root_fd, rel)
            return [Removed(self.rel, TODO, "(not a plain file)" if not stat.S_ISREG(st.st_mode)
                            else "(over 1 MB, not read)")]  # fmt: skip
        data = safe_fs.read_at(root_fd, rel, MAX_CONFIG_BYTES)[0]
        start = self.start_texts.get(TODO)
        if data == start:
            return []
        known = set((start or b"").split(b"\n"))
        lines = data.split(b"\n")
        bad = [line for line in lines if runs_command(line) and line not in known]
        if not bad:
            return []
        _put_file(root_fd, rel, b"\n".join(line for line in lines if line not in bad), st.st_mode & 0o666)
        return [Removed(self.rel, TODO, _text(line.strip())) for line in bad]

    def _allowed(self, name: str) -> frozenset[Entry]:
        if name not in self.allowed:
            entries = list_config(self.start_texts.get(name, b"")) or []  # Unchecked: asked again next time
            self.allowed[name] = frozenset(e for e in entries if runs_program(e))
        return self.allowed[name]

    def _hook_entries(self, root_fd: int) -> list[tuple[str, os.stat_result]]:
        entries: list[tuple[str, os.stat_result]] = []
        with contextlib.suppress(OSError, ValueError):
            fd = safe_fs.open_dir_at(root_fd, f"{self.rel}/hooks")
            try:
                for name in sorted(os.listdir(fd)):
                    with contextlib.suppress(OSError):
                        entries.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
            finally:
                os.close(fd)
        return entries

    def inner_git_dirs(self, root_fd: int) -> list[str]:
        """Linked worktrees' git dirs and submodules' (bounded, no link followed): git reads their config too."""
        found: list[str] = []
        stack, seen = [f"{self.rel}/modules"], 0
        with contextlib.suppress(OSError, ValueError):
            fd = safe_fs.open_dir_at(root_fd, f"{self.rel}/worktrees")
            try:
                found += [f"{self.rel}/worktrees/{e.name}" for e in os.scandir(fd) if e.is_dir(follow_symlinks=False)]
            finally:
                os.close(fd)
        while stack and seen < MAX_MODULE_DIRS:
            folder = stack.pop()
            seen += 1
            with contextlib.suppress(OSError, ValueError):
                fd = safe_fs.open_dir_at(root_fd, folder)
                try:
                    children = [f"{folder}/{e.name}" for e in os.scandir(fd) if e.is_dir(follow_symlinks=False)]
                finally:
                    os.close(fd)
                for child in children:
                    if _lstat(root_fd, f"{child}/HEAD") is not None:
                        found.append(child)
                        stack.append(f"{child}/modules")
                    else:
                        stack.append(child)  # a submodule named a/b lives in modules/a/b
        return found


def _not_checked(repository: str, setting: str, exc: BaseException) -> Removed:
    """A file that could not be read or removed (a lease a command holds on it makes every open fail with
    EAGAIN, and a config left unread once was never looked at again): reported, and the git dir's stamp is
    not kept, so it is read again after the next command, when a background task ends, and at the close."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return Removed(repository, setting, f"(could NOT be checked: {why}; checked again after the next command)")


def _link_text(root_fd: int, rel: str, st: os.stat_result) -> bytes:
    if stat.S_ISLNK(st.st_mode):
        return b"link:" + safe_fs.readlink_at(root_fd, rel).encode("utf-8", "surrogateescape")
    return safe_fs.read_at(root_fd, rel, MAX_LINK_BYTES)[0]


def _value(raw: bytes | None) -> str | None:
    return None if raw is None else _text(raw)
