"""The Landlock plan for a sandbox policy: which paths get which rights. Pure, so it can be asserted exactly.

Landlock only grants; nothing can be denied beneath a grant. So a hidden path (~/.ssh) is kept unreadable
by never granting anything above it: a folder that holds a hidden path is split into its children, and
every child but the hidden one gets the grant. The workspace gets every right, its private tmp too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kimi_cli.kernel.contain import below_normal, normal
from kimi_cli.kernel.rights import (
    FILE_RIGHTS,
    IOCTL_DEV,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    READ,
    READ_DIR,
    READ_FILE,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    WRITE_FILE,
    fs_rights_for_abi,
)
from kimi_cli.sandbox.hidden import not_yet
from kimi_cli.sandbox.policy import SandboxPolicy

# /dev is listed, never granted whole: its ttys (the user's keystrokes, escape sequences), /dev/shm and the
# hardware stay out of reach. These devices are what builds open; a pty is not offered.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


@dataclass(frozen=True)
class Grant:
    path: str
    access: int


@dataclass(frozen=True)
class LandlockPlan:
    handled_fs: int
    handled_net: int  # 0 when the network is allowed
    scoped: int  # ABI 6: abstract unix sockets and signals stay inside the sandbox
    grants: tuple[Grant, ...]


def _children(path: str) -> list[str]:
    try:
        return sorted(os.path.join(path, name) for name in os.listdir(path))
    except OSError:
        return []


def split_around(root: str, hidden: Iterable[str], list_dir: Callable[[str], list[str]] = _children) -> list[str]:
    """The paths that cover everything under `root` except the hidden ones (and nothing above them)."""
    hidden = [normal(h) for h in hidden]
    root = normal(root)
    if any(h == root for h in hidden):
        return []
    below_root = [h for h in hidden if below_normal(root, h) is not None]  # none equals it (returned above)
    if not below_root:
        return [root]
    out: list[str] = []
    for child in list_dir(root):
        out += split_around(child, below_root, list_dir)
    return out


def landlock_plan(
    policy: SandboxPolicy,
    abi: int,
    list_dir: Callable[[str], list[str]] = _children,
    is_dir: Callable[[str], bool] = os.path.isdir,
    is_link: Callable[[str], bool] = os.path.islink,
) -> LandlockPlan:
    """Read and execute everywhere but the hidden paths; every right in the workspace and its private tmp.

    A symlink is never granted: a rule on it would cover its target, which may hold a hidden path
    (pytest's `pytest-current`, a dotfiles link). What it points to is readable when the target is.
    """
    handled = fs_rights_for_abi(abi)
    hidden = [str(h.path) for h in policy.hidden]
    # Where a home credential would appear later (~/.config/gh): split for reading, never granted whole.
    # Not for the writable roots: a workspace that is ~ must still take new files at its top.
    later = not_yet(policy.hidden_patterns, policy.home_roots)
    writable = [str(policy.workspace), str(policy.private_tmp), *(str(p) for p in policy.writable)]
    grants: dict[str, int] = {}

    def grant(path: str, access: int) -> None:
        if is_link(path):
            return
        access &= handled
        if not is_dir(path):
            access &= FILE_RIGHTS
        if access:
            grants[path] = grants.get(path, 0) | access

    for path in split_around("/", [*hidden, *later, "/dev"], list_dir):
        grant(path, READ)
    grant("/dev", READ_DIR)
    for path in DEVICES:
        grant(path, READ_FILE | WRITE_FILE | IOCTL_DEV)
    for root in writable:  # hidden paths inside the workspace stay hidden there too
        for path in split_around(root, hidden, list_dir):
            grant(path, handled)
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if (not policy.network and abi >= 4) else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    return LandlockPlan(handled, handled_net, scoped, tuple(Grant(p, a) for p, a in sorted(grants.items())))
