"""The one containment check (kimi_cli/kernel/contain.py): "is this path the root, or below it", component by
component, for the file tools, the sandbox's policy and guard, host git and the landlock supervisors alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kimi_cli.kernel.contain import below, inside, inside_any

from support import ROOT_DIR


@pytest.mark.parametrize(
    ("root", "path", "rel"),
    [
        ("/ws", "/ws", ""),
        ("/ws", "/ws/a/b", "a/b"),
        ("/ws/", "/ws/a", "a"),
        ("/ws", "/ws2", None),  # a sibling whose name starts with the root's
        ("/ws", "/ws-evil/x", None),
        ("/ws", "/w", None),
        ("/ws", "/ws/a/../../etc", None),  # lexical `..` out of it
        ("/", "/etc/passwd", "etc/passwd"),
        ("//", "/x", "x"),
        ("a", "a/b", "b"),  # workspace-relative names (the guard's)
        ("a", "ab", None),
        ("", "a/b", "a/b"),
        (".", "../x", None),
    ],
)
def test_below_and_inside_agree(root: str, path: str, rel: str | None) -> None:
    assert below(root, path) == rel
    assert inside(path, root) is (rel is not None)
    assert inside(Path(path), Path(root)) is (rel is not None) or root in ("", ".")


def test_inside_any_is_one_of_the_roots() -> None:
    assert inside_any("/tmp/kimi-tmp-1/sock", ["/ws", "/tmp/kimi-tmp-1"])
    assert not inside_any("/tmp/kimi-tmp-10", ["/ws", "/tmp/kimi-tmp-1"])
    assert not inside_any("/ws", [])


# Where a second copy of the check used to live: `_inside` (host git, twice), `_under` (program lookup),
# `below` (the protected table), string prefixes in the supervisors, the sandbox's policy and backends.
OWN = ("kimi_cli/hostsafe", "kimi_cli/sandbox", "kimi_cli/kernel", "kimi_cli/util", "tools/workspace.py")
COPY = re.compile(r"\.is_relative_to\(|def _inside\(|def _under\(|def below\(|startswith\([^)]*\+ ?[\"']/[\"']\)")


# Not a containment decision: the supervisor rewrites a command's own path text for /proc/self (it must not be
# normalised: `fd/3/..` means what the kernel makes of it), and the inode it opens is then checked by contain.
REWRITES = {"kimi_cli/kernel/supervise.py": 'if path == link or path.startswith(link + "/"):'}


def test_no_second_containment_check_in_the_security_packages() -> None:
    found = []
    for top in OWN:
        for path in [ROOT_DIR / top] if top.endswith(".py") else sorted((ROOT_DIR / top).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                rel = str(path.relative_to(ROOT_DIR))
                if COPY.search(line) and path.name != "contain.py" and REWRITES.get(rel) != line.strip():
                    found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []
