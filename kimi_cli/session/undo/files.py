"""Moving files between the workspace and the shadow repository without following a link (kimi_cli.hostsafe.fs).

Restores write and delete through folder descriptors opened from the workspace root with O_NOFOLLOW (or
openat2 RESOLVE_NO_SYMLINKS), so a folder flipped to a link by a sandboxed command, at any moment, makes
the step fail instead of writing or deleting outside. Snapshots are checked the same way: git reads the
work tree by path, so each blob a snapshot added is compared with a no-follow read of the file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass

from kimi_cli.hostsafe import fs as safe_fs

REGULAR, EXECUTABLE, LINK, GITLINK = "100644", "100755", "120000", "160000"


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    oid: str
    path: str


def blob_id(data: bytes, hex_len: int = 40) -> str:
    """The id git gives these bytes as a blob (SHA-1, or SHA-256 for a 64-digit repository)."""
    algo = hashlib.sha256 if hex_len == 64 else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def parse_tree(listing: str) -> list[TreeEntry]:
    """`git ls-tree -r -z` output: `<mode> <type> <oid>\\t<path>` records."""
    entries = []
    for record in filter(None, listing.split("\0")):
        meta, _, path = record.partition("\t")
        mode, _kind, oid = meta.split(" ")
        entries.append(TreeEntry(mode, oid, path))
    return entries


def parse_raw_diff(listing: str) -> list[TreeEntry]:
    """`git diff-tree -r -z` raw output: the new side of every added, modified or retyped entry."""
    parts = listing.split("\0")
    entries = []
    for i in range(0, len(parts) - 1, 2):
        meta, path = parts[i], parts[i + 1]
        if not meta.startswith(":"):
            continue
        _old_mode, new_mode, _old_oid, new_oid, status = meta[1:].split(" ")
        if status[:1] in ("A", "M", "T"):
            entries.append(TreeEntry(new_mode, new_oid, path))
    return entries


def parse_batch(output: bytes) -> dict[str, bytes]:
    """`git cat-file --batch` output: oid -> content."""
    blobs: dict[str, bytes] = {}
    pos = 0
    while pos < len(output):
        end = output.index(b"\n", pos)
        header = output[pos:end].decode("ascii").split(" ")
        pos = end + 1
        if len(header) < 3:  # "<oid> missing"
            continue
        size = int(header[2])
        blobs[header[0]] = output[pos : pos + size]
        pos += size + 1
    return blobs


def read_entry(root_fd: int, path: str, mode: str, max_bytes: int) -> bytes | None:
    """What the workspace holds at `path` now, as the blob a tree entry of `mode` would store; None when it
    holds something else or cannot be read without following a link."""
    try:
        if mode == LINK:
            st = safe_fs.lstat_at(root_fd, path)
            return os.fsencode(safe_fs.readlink_at(root_fd, path)) if stat.S_ISLNK(st.st_mode) else None
        if mode in (REGULAR, EXECUTABLE):
            data, _st = safe_fs.read_at(root_fd, path, max_bytes + 1)
            return data if len(data) <= max_bytes else None
    except (OSError, ValueError):
        return None
    return None


def write_entry(root_fd: int, entry: TreeEntry, data: bytes) -> None:
    """Put one tree entry back: a file (temp + rename in its folder's descriptor) or a link (made, not followed)."""
    if entry.mode == LINK:
        safe_fs.symlink_at(root_fd, entry.path, os.fsdecode(data))
    else:
        mode = 0o777 if entry.mode == EXECUTABLE else 0o666  # & ~umask, as git's own checkout
        safe_fs.write_atomic_at(root_fd, entry.path, data, mode, keep_mode=False)


def remove_entry(root_fd: int, path: str) -> None:
    """Delete a file or link the target snapshot does not have, and the folders it leaves empty."""
    safe_fs.remove_at(root_fd, path)


def why(exc: OSError) -> str:
    if isinstance(exc, safe_fs.UnsafePath):
        return "a symlink is on the way (not followed)"
    if isinstance(exc, IsADirectoryError) or exc.errno == errno.EISDIR:
        return "a folder is in the way"
    return exc.strerror or str(exc)
