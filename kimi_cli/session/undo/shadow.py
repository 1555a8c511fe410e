"""Checkpoints: snapshots of the workspace in a shadow git repository under ~/.kimi, never the user's .git.

Each snapshot is `git add -A` into the shadow's own index (incremental: git's stat cache re-hashes only
changed files) and `git write-tree` (content-addressed: unchanged files cost nothing to store).

A snapshot costs one git process when nothing changed since this process's last one (the listing that finds
big files finds nothing to add, and the index is the one it left), and four when something did (listing,
add of the listed paths only, write-tree, and the no-follow check of what changed). The shadow's own
info/attributes turns every filter driver and conversion off for every path
(host_git.NO_CONVERSION_ATTRIBUTES), so no call needs the config listed for driver names first.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.hostsafe.git.host import NO_CONVERSION_ATTRIBUTES, run_git
from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import open_repo
from kimi_cli.session.undo.files import (
    GITLINK,
    TreeEntry,
    blob_id,
    parse_batch,
    parse_raw_diff,
    parse_tree,
    read_entry,
    remove_entry,
    why,
    write_entry,
)
from kimi_cli.util.paths import kimi_home, workspace_key

MAX_FILE_BYTES = 10 * 1024 * 1024
PATHSPEC_MAX = 256  # changed paths named to `git add` (more: it walks the tree instead)
# Caches that tools regenerate: never worth restoring, and a test run that writes them changed nothing.
ALWAYS_EXCLUDED = ("__pycache__/", "*.py[co]", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".hypothesis/")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Snapshots store bytes as they are on disk, and treat nested repositories as folders git does not enter.
SHADOW_CONFIG = (("core.autocrlf", "false"), ("core.safecrlf", "false"), ("diff.ignoreSubmodules", "all"))


NOT_REGULAR = re.compile(r"error: (.+): can only add regular files, symbolic links or git-directories")


class CheckpointError(Exception):
    """The shadow repository could not snapshot or restore."""


@dataclass(frozen=True)
class FileChange:
    status: str  # A added, D deleted, M modified (from the first tree to the second)
    path: str


class ShadowRepo:
    """A bare repository beside the workspace, with its own index, that stores workspace trees."""

    def __init__(self, workspace: Path, home: Path | None = None, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.workspace = workspace.resolve()
        self.max_file_bytes = max_file_bytes
        self.last_skipped: list[tuple[str, int]] = []
        self.last_nested: list[str] = []  # nested repositories left out of the last snapshot
        self.last_not_restored: list[tuple[str, str]] = []  # (path, why) the last restore could not put back
        self.last_corrected: list[str] = []  # paths the last snapshot re-read because git's read did not hold
        self._last_tree: str | None = None  # this process's previous snapshot: the next one is checked against it
        self._own_tree: str | None = None  # the tree this process last wrote from the index, and
        self._index_stamp: tuple[int, ...] | None = None  # the index file as that left it (another process's
        # snapshot in the same shadow changes it)
        self._dropped = False  # old gitlink entries leave the index once per process
        self.git_dir = (home or kimi_home()) / "checkpoints" / workspace_key(self.workspace)
        self._paths = {
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.git_dir / "index"),
        }

    def _git(self, *args: str, input: bytes | None = None) -> str:
        # Host git, hardened (kimi_cli.hostsafe.git.host): the workspace's nested repositories and attributes
        # cannot start a program here, and no filter driver rewrites what is snapshotted.
        out = run_git(args, self.workspace, extra=SHADOW_CONFIG, input=input, timeout=None, env_paths=self._paths)
        if out.returncode != 0:
            raise CheckpointError(f"git {args[0]} failed: {out.stderr.decode(errors='replace').strip()}")
        return out.stdout.decode("utf-8", errors="surrogateescape")

    def _init(self) -> None:
        if (self.git_dir / "HEAD").exists():
            self._attributes()
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        out = run_git(["init", "-q", "--bare", "--template=", str(self.git_dir)], self.git_dir.parent)
        if out.returncode != 0:
            raise CheckpointError(f"git init failed: {out.stderr.decode(errors='replace').strip()}")
        settings = (("gc.auto", "0"), ("core.quotepath", "false"), ("core.untrackedCache", "true"))
        self._attributes()
        for key, value in settings:
            self._git("config", key, value)
        self._borrow_user_objects()

    def _attributes(self) -> None:
        """info/attributes holds exactly host_git.NO_CONVERSION_ATTRIBUTES (made so if not): snapshots store the
        bytes on disk, no filter driver a .gitattributes names ever runs, and host_git sees it and skips the
        `git config --list` it would otherwise run before every call."""
        path = self.git_dir / "info" / "attributes"
        if _small_file(path, len(NO_CONVERSION_ATTRIBUTES) + 1) == NO_CONVERSION_ATTRIBUTES:
            return
        path.parent.mkdir(exist_ok=True)
        path.unlink(missing_ok=True)  # whatever was there (a link, a FIFO) is replaced, not written through
        path.write_bytes(NO_CONVERSION_ATTRIBUTES)

    def _borrow_user_objects(self) -> None:
        """Read the user's object store as an alternate: committed files are then never stored twice.

        Only reads: nothing is written to the user's .git. A cold snapshot of a clean repository writes no
        objects at all (measured: 5,000 files in ~0.2 s instead of several seconds of loose-object writes).
        The store is found without running git, and not borrowed from a repository refused as unsafe.
        """
        try:
            location = open_repo(self.workspace)
        except (UnsafeRepository, OSError):
            return
        objects = location.common_dir / "objects" if location is not None else None
        if objects is not None and objects.is_dir():
            (self.git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (self.git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n")

    def _scan(self) -> list[str]:
        """List what `git add -A` would take up, with the same exclusions; returns those paths (none: the index
        already holds the workspace). info/exclude is the user's own .git/info/exclude, plus files too large to
        snapshot (remembered in last_skipped) and nested repositories (in last_nested: git would record them as
        submodule links, and an empty one, `git init x`, makes `git add` fail outright). Last snapshot's big
        files and nested repositories stay excluded while they still are (checked here, by lstat), so the
        listing does not name them again. Nothing here follows a link (kimi_cli.hostsafe.fs)."""
        from kimi_cli.hostsafe import fs as safe_fs

        static = list(ALWAYS_EXCLUDED)
        big: dict[str, int] = {}
        nested: list[str] = []
        with safe_fs.rooted(self.workspace) as root_fd:
            with contextlib.suppress(OSError):
                static.append(safe_fs.read_at(root_fd, ".git/info/exclude", 1 << 20)[0].decode(errors="replace"))
            for rel, _size in self.last_skipped:
                size = _size_at(root_fd, rel)
                if size is not None and size > self.max_file_bytes:
                    big[rel] = size
            nested = [rel for rel in self.last_nested if _is_repo_at(root_fd, rel)]
            self._write_exclude_file(static, big, nested)
            listing = self._git(
                "ls-files", "-z", "-t", "--others", "--modified", "--exclude-standard"
            ).split("\0")  # fmt: skip
            wanted: list[str] = []
            for item in filter(None, listing):
                tag, rel = item[:1], item[2:]
                if tag == "?" and rel.endswith("/"):  # an untracked nested repository: a folder git does not enter
                    nested.append(rel.rstrip("/"))
                    continue
                size = _size_at(root_fd, rel)
                if size is not None and size > self.max_file_bytes:
                    big[rel] = size
                    if tag == "?":  # excluded from now on; a tracked one is still updated by `git add -A`
                        continue
                wanted.append(rel)
        self.last_skipped, self.last_nested = sorted(big.items()), nested
        self._write_exclude_file(static, big, nested)
        return wanted

    def _write_exclude_file(self, static: list[str], big: dict[str, int], nested: list[str]) -> None:
        lines = [*static, *("/" + _escape_pattern(rel) for rel in sorted(big)),
                 *("/" + _escape_pattern(rel + "/") for rel in sorted(nested))]  # fmt: skip
        text = ("\n".join(lines) + "\n").encode()
        path = self.git_dir / "info" / "exclude"
        if _small_file(path, len(text) + 1) == text:
            return
        path.parent.mkdir(exist_ok=True)
        path.unlink(missing_ok=True)
        path.write_bytes(text)

    def _stamp(self) -> tuple[int, ...] | None:
        try:
            st = os.stat(self.git_dir / "index")
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def snapshot(self) -> str:
        """Record the workspace as it is now; returns the tree id."""
        self._init()
        if not self._dropped:
            self._dropped = True
            self._drop_gitlinks()
        wanted = self._scan()
        if (
            not wanted
            and self._own_tree is not None
            and self._own_tree == self._last_tree
            and self._index_stamp is not None
            and self._index_stamp == self._stamp()
        ):
            return self._own_tree  # `git add -A` would change nothing: the index holds this tree already
        if wanted:
            self._add(wanted)
        tree = self._git("write-tree").strip()
        if self._last_tree is not None and tree != self._last_tree:
            tree = self._verify(self._last_tree, tree)
        self._last_tree = self._own_tree = tree
        self._index_stamp = self._stamp()
        return tree

    def _add(self, wanted: list[str]) -> None:
        """`git add -A` of the paths the listing found, so git does not walk the tree a second time; of the
        whole tree when they are many (git matches each path against each pathspec) or git refuses them (a
        path gone since the listing, a FIFO where a file was)."""
        if len(wanted) <= PATHSPEC_MAX:
            names = "\0".join(wanted).encode("utf-8", "surrogateescape")
            with contextlib.suppress(CheckpointError):
                self._git("--literal-pathspecs", "add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                          "--pathspec-file-nul", input=names)  # fmt: skip
                return
        try:
            self._git("add", "-A", "--ignore-errors", ".")
        except CheckpointError as exc:
            # A tracked file turned into a FIFO or socket (`rm a.py; mkfifo a.py`) fails every later `git add`,
            # which would leave every later step uncovered: such a path is recorded as gone, the rest stands.
            lines = str(exc).removeprefix("git add failed: ").splitlines()
            odd = [m.group(1) for m in map(NOT_REGULAR.fullmatch, lines) if m]
            if not odd or len(odd) != len([ln for ln in lines if ln.startswith(("error:", "fatal:"))]):
                raise
            self._git("update-index", "-z", "--force-remove", "--stdin", input="\0".join(odd).encode())
            self._git("add", "-A", "--ignore-errors", ".")  # untracked now: git passes such a file by

    def expect(self, tree: str) -> None:
        """The tree the workspace had at the last snapshot someone recorded (a session's log): the next
        snapshot in this process is checked against it, as later ones are against their predecessor."""
        if self._last_tree is None:
            self._last_tree = tree

    def _drop_gitlinks(self) -> None:
        """Nested repositories an older snapshot recorded as submodule links leave the index (once per process)."""
        if not (self.git_dir / "index").exists():
            return
        links = [line.split("\t", 1)[1] for line in self._git("ls-files", "-s", "-z").split("\0")
                 if line.startswith(GITLINK + " ")]  # fmt: skip
        if links:
            self._git("update-index", "-z", "--force-remove", "--stdin", input="\0".join(links).encode())

    def _verify(self, old: str, new: str) -> str:
        """Git reads the work tree by path, so a folder flipped to a link while `git add` ran can put an outside
        file's bytes into the snapshot (and a later undo would write them into the workspace). Every blob that
        changed since the last snapshot is compared with a no-follow read; a mismatch is replaced by what that
        read found, or dropped when it found nothing it may read. Returns the (possibly corrected) tree."""
        from kimi_cli.hostsafe.fs import rooted

        try:
            listing = self._git("diff-tree", "-r", "-z", "--no-renames", old, new)
        except CheckpointError:  # `old` is not in this shadow (it was recreated): check every file instead
            listing = self._git("diff-tree", "-r", "-z", "--no-renames", EMPTY_TREE, new)
        changed = parse_raw_diff(listing)
        fixes: list[str] = []
        self.last_corrected = []
        with rooted(self.workspace) as root_fd:
            for entry in changed:
                if entry.mode == GITLINK:
                    continue
                data = read_entry(root_fd, entry.path, entry.mode, self.max_file_bytes)
                if data is not None and blob_id(data, len(entry.oid)) == entry.oid:
                    continue
                self.last_corrected.append(entry.path)
                if data is None:
                    fixes.append(f"0 {'0' * len(entry.oid)}\t{entry.path}")
                else:
                    oid = self._git("hash-object", "-w", "--stdin", input=data).strip()
                    fixes.append(f"{entry.mode} {oid}\t{entry.path}")
        if not fixes:
            return new
        self._git("update-index", "-z", "--index-info", input="\0".join(fixes).encode("utf-8", "surrogateescape"))
        return self._git("write-tree").strip()

    def changes(self, old: str, new: str) -> list[FileChange]:
        """What differs between two snapshots, path by path."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        parts = [p for p in out.split("\0") if p]
        return [FileChange(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    def diff(self, old: str, new: str) -> str:
        """A unified diff between two snapshots."""
        return self._git("diff-tree", "-p", "--no-renames", old, new)

    def patch(self, old: str, new: str) -> bytes:
        """The change between two snapshots as a patch `git apply` takes: binary files included, full ids."""
        text = self._git("diff-tree", "-r", "-p", "--binary", "--full-index", "--no-renames", old, new)
        return text.encode("utf-8", errors="surrogateescape")

    def numstat(self, old: str, new: str) -> dict[str, tuple[int | None, int | None]]:
        """Lines added and removed per path between two snapshots (None, None: a binary file)."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--numstat", old, new)
        stats: dict[str, tuple[int | None, int | None]] = {}
        for entry in out.split("\0"):
            added, _, rest = entry.partition("\t")
            removed, _, path = rest.partition("\t")
            if path:
                stats[path] = (int(added) if added.isdigit() else None, int(removed) if removed.isdigit() else None)
        return stats

    def restore(self, target: str, changes: list[FileChange] | None = None) -> list[FileChange]:
        """Make the workspace match a snapshot: rewrite changed files, bring back deleted ones, remove new ones.

        `changes` (from now to the target) may come from a snapshot the caller just took. Ignored and
        oversized files are never touched, since snapshots never held them. Every write and delete goes
        through folder descriptors opened from the workspace without following a link
        (kimi_cli.session.undo.files): a path that runs through a link is left alone and reported in
        last_not_restored, never followed out of the workspace. The shadow index keeps its stat cache: the
        next snapshot re-reads only the files written here.
        """
        from kimi_cli.hostsafe.fs import rooted
        from kimi_cli.hostsafe.protected import protected_part

        if changes is None:
            changes = self.changes(self.snapshot(), target)
        self.last_not_restored = []
        # .kimi/ (git never snapshots a .git) belongs to the user: undo neither writes nor deletes there.
        kept = [c for c in changes if protected_part(c.path) is not None]
        self.last_not_restored += [(c.path, "inside .kimi/ or .git/, which undo leaves as it is") for c in kept]
        changes = [c for c in changes if protected_part(c.path) is None]
        wanted = {c.path for c in changes if c.status != "D"}
        listing = self._git("ls-tree", "-r", "-z", target) if wanted else ""
        entries = [e for e in parse_tree(listing) if e.path in wanted]
        with rooted(self.workspace) as root_fd:
            for change in changes:
                if change.status == "D":  # present now, absent in the target
                    try:
                        remove_entry(root_fd, change.path)
                    except OSError as exc:
                        self.last_not_restored.append((change.path, why(exc)))
            for batch in _batches(entries):
                blobs = self._blobs([e.oid for e in batch])
                for entry in batch:
                    if entry.mode == GITLINK or entry.oid not in blobs:
                        self.last_not_restored.append((entry.path, "not in the snapshot as a file"))
                        continue
                    try:
                        write_entry(root_fd, entry, blobs[entry.oid])
                    except OSError as exc:
                        self.last_not_restored.append((entry.path, why(exc)))
        return changes

    def _blobs(self, oids: list[str]) -> dict[str, bytes]:
        out = self._git("cat-file", "--batch", input=("\n".join(oids) + "\n").encode())
        return parse_batch(out.encode("utf-8", "surrogateescape"))  # _git's text decoding is lossless


def _batches(entries: list[TreeEntry], limit: int = 64 * 1024 * 1024) -> list[list[TreeEntry]]:
    """Groups of entries whose blobs together stay near `limit` bytes (sizes unknown: counted as the cap)."""
    per = max(1, limit // MAX_FILE_BYTES)
    return [entries[i : i + per] for i in range(0, len(entries), per)]


def _small_file(path: Path, limit: int) -> bytes | None:
    """The start of a regular file of kimi's own (None for anything else: a FIFO there is not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _size_at(root_fd: int, rel: str) -> int | None:
    """The size of what is at `rel` now (a final link: its own), or None when nothing is, or a link is above it."""
    from kimi_cli.hostsafe import fs as safe_fs

    try:
        return safe_fs.lstat_at(root_fd, rel).st_size
    except (OSError, ValueError):
        return None


def _is_repo_at(root_fd: int, rel: str) -> bool:
    """Whether `rel` is still a nested repository: a real folder with a .git in it."""
    from kimi_cli.hostsafe import fs as safe_fs

    try:
        safe_fs.lstat_at(root_fd, rel + "/.git")
    except (OSError, ValueError):
        return False
    return True


def _escape_pattern(path: str) -> str:
    return "".join("\\" + c if c in "*?[]!#\\ " else c for c in path)
