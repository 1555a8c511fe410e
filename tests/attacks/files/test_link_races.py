"""The file tools under a racing attacker: a process swaps a workspace folder with a link to a fake ~/.ssh
(renameat2 RENAME_EXCHANGE) while ReadFile, Grep, Glob, WriteFile, StrReplaceFile and ReadMediaFile hammer
paths through that folder. The secret never appears in a result and nothing outside is written; beside it,
links inside the workspace and new nested files still work. Run once with openat2 and once with the
O_NOFOLLOW walk that kernels without openat2 get; Grep once under Landlock and once checked line by line."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from swapper import start_swapper, stop_swapper

from kimi_cli.agent.toolbox import default_tools
from kimi_cli.hostsafe import fs as safe_fs
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.grep_tool import Grep, GrepParams
from kimi_cli.tools.workspace import Workspace

SECRET = "FAKE-PRIVATE-KEY-7f3a9c0d"
OUTSIDE_ONLY = "known_hosts_OUTSIDE_ONLY"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(params=["openat2", "nofollow-walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways safe_fs resolves: the kernel's openat2, and the per-component walk older kernels get."""
    if request.param == "nofollow-walk":
        monkeypatch.setattr(safe_fs, "_openat2_ok", False)
    elif not safe_fs._have_openat2():
        pytest.skip("this kernel has no openat2")
    return str(request.param)


@pytest.fixture
def arena(tmp_path: Path) -> dict[str, Path]:
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(f"-----BEGIN {SECRET}-----\n")
    (ssh / "notes.txt").write_text(f"shared line\n{SECRET}\n")
    (ssh / "pic.png").write_bytes(PNG + SECRET.encode())
    (ssh / OUTSIDE_ONLY).write_text(f"{SECRET}\n")
    ws = tmp_path / "ws"
    d = ws / "d"
    d.mkdir(parents=True)
    (d / "id_rsa").write_text("inside placeholder\n")
    (d / "notes.txt").write_text("shared line\ninside\n")
    (d / "pic.png").write_bytes(PNG + b"inside picture")
    (ws / "swap").symlink_to(ssh)  # exchanged with d, again and again
    (ws / "real").mkdir()
    (ws / "real" / "x.txt").write_text("legit through link\n")
    (ws / "inlink").symlink_to("real")  # a link inside that points inside: must keep working
    return {"ws": ws, "ssh": ssh, "d": d}


def outside_state(ssh: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(ssh.iterdir())}


def attack_is_live(ws: Path) -> bool:
    """A naive path-based read does hit the secret while the swapper runs: the race is real."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if SECRET in (ws / "d" / "id_rsa").read_text():
                return True
        except OSError:
            continue
    return False


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ReadFile", {"path": "d/id_rsa"}),
    ("ReadFile", {"path": "d/notes.txt"}),
    ("Grep", {"pattern": "BEGIN|shared|FAKE", "path": "d"}),
    ("Grep", {"pattern": "FAKE-PRIVATE"}),
    ("Glob", {"pattern": "**/*"}),
    ("Glob", {"pattern": "*", "directory": "d"}),
    ("WriteFile", {"path": "d/written.txt", "content": "mine\n"}),
    ("WriteFile", {"path": "d/id_rsa", "content": "overwritten inside\n"}),
    ("WriteFile", {"path": "d/notes.txt", "content": "more\n", "mode": "append"}),
    ("StrReplaceFile", {"path": "d/notes.txt", "edit": {"old": "shared line", "new": "shared line"}}),
    ("ReadMediaFile", {"path": "d/pic.png"}),
    ("ReadFile", {"path": "real/x.txt"}),  # beside the attack: a path it does not touch always works
]


async def hammer(ws: Path, rounds: int) -> list[tuple[str, str, list[str], bool]]:
    registry = default_tools()
    ctx = ToolContext(workspace=Workspace(ws))
    checked_grep = Grep(confine=False)
    results = []
    for i in range(rounds):
        name, args = CALLS[i % len(CALLS)]
        result = await registry.call(name, json.dumps(args), ctx)
        results.append((name, result.output, result.images, result.is_error))
        if name == "Grep":  # the fallback for kernels without Landlock, on the same path
            try:
                out = await checked_grep.run(GrepParams(**args), ctx)
                results.append(("Grep(checked)", out.output, [], out.is_error))
            except ToolError as exc:
                results.append(("Grep(checked)", str(exc), [], True))
    return results


def leaked(output: str, images: list[str]) -> bool:
    pictures = [base64.b64decode(url.split(",", 1)[1]) for url in images]
    return SECRET in output or OUTSIDE_ONLY in output or any(SECRET.encode() in p for p in pictures)


def test_a_swapping_attacker_never_gets_the_secret_out_or_a_write_outside(
    arena: dict[str, Path], resolver: str
) -> None:
    ws, ssh = arena["ws"], arena["ssh"]
    before = outside_state(ssh)
    flipper = start_swapper(ws / "d", ws / "swap")
    try:
        assert attack_is_live(ws), "the swapper never made a naive read reach the secret"
        results = asyncio.run(hammer(ws, 200))
    finally:
        stop_swapper(flipper, ws / "d", ws / "swap")
    leaks = [(name, out[:200]) for name, out, images, _ in results if leaked(out, images)]
    assert not leaks, f"secret reached a result ({resolver}): {leaks[:3]}"
    assert outside_state(ssh) == before, "a file outside the workspace was written"
    assert not (ssh / "written.txt").exists()
    beside = [err for name, out, _, err in results if name == "ReadFile" and "legit through link" in out]
    assert beside and not any(beside)
    # The race does not just refuse everything: some calls through the swapped folder succeeded inside.
    inside = ("inside placeholder", "overwritten inside")
    assert any(not err and any(text in out for text in inside) for _, out, _, err in results)


def test_links_inside_the_workspace_and_new_nested_files_still_work(arena: dict[str, Path], resolver: str) -> None:
    ws = arena["ws"]
    ctx = ToolContext(workspace=Workspace(ws))
    registry = default_tools()

    def call(name: str, args: dict[str, Any]) -> tuple[str, bool]:
        result = asyncio.run(registry.call(name, json.dumps(args), ctx))
        return result.output, result.is_error

    out, err = call("ReadFile", {"path": "inlink/x.txt"})
    assert not err and "legit through link" in out
    out, err = call("WriteFile", {"path": "inlink/new/deep/file.txt", "content": "nested\n"})
    assert not err, out
    assert (ws / "real" / "new" / "deep" / "file.txt").read_text() == "nested\n"
    assert (ws / "inlink").is_symlink()
    out, err = call("StrReplaceFile", {"path": "inlink/x.txt", "edit": {"old": "legit", "new": "still legit"}})
    assert not err, out
    assert (ws / "real" / "x.txt").read_text() == "still legit through link\n"
    out, err = call("Grep", {"pattern": "still legit", "path": "inlink"})
    assert not err and "x.txt:1:still legit through link" in out
    out, err = call("Glob", {"pattern": "**/*.txt"})
    assert "real/new/deep/file.txt" in out and "real/x.txt" in out
    out, err = call("ReadFile", {"path": "swap/id_rsa"})  # the link to the fake ~/.ssh itself: refused
    assert err and "outside the workspace" in out and SECRET not in out
