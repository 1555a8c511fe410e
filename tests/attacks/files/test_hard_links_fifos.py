"""Hard links, FIFOs and devices against kimi's host-side file handling.

- A hard link is not a symlink: no-follow opens do not see it. So the sandbox must not be able to make one to a
  file outside the workspace (it cannot: a bind mount or Landlock's REFER rule says EXDEV), nor a device node;
  and kimi never writes through one it finds: an append to a file with other names is refused (an overwrite
  replaces this name only), since a user's hard link (pnpm's store, a backup) may lead outside.
- A FIFO named like a source file must not hang the pack, AGENTS.md or the "files changed" note (they open
  without blocking and read only regular files). The attack: `rm app.py && mkfifo app.py` made
  every later checkpoint fail (`git add` refuses the type change), so undo covered none of the steps after
  it; such a path is now recorded as gone and the snapshot goes on.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from kimi_cli.session.undo.shadow import ShadowRepo

from scripted_server import ScriptedModelServer
from support import call_tool, git, kimi_executable, run_kimi, tool_call, tool_results


def outside_files(rig: object) -> list[Path]:
    """Files outside the workspace that this user can read and that the sandbox does not hide."""
    candidates = [rig.outside / "notes.txt", Path("/etc/hostname"), Path("/etc/passwd"), Path.home() / ".profile"]  # type: ignore[attr-defined]
    (rig.outside / "notes.txt").write_text("outside\n")  # type: ignore[attr-defined]
    return [p for p in candidates if p.is_file() and os.access(p, os.R_OK)]


def test_the_sandbox_cannot_hard_link_or_make_a_device_for_an_outside_file(rig) -> None:  # type: ignore[no-untyped-def]
    files = outside_files(rig)
    links = " ; ".join(f"ln {f} hl{i}" for i, f in enumerate(files))
    out = rig.run(f"{links} ; mknod mem c 1 1 ; mknod disk b 8 0 ; ls -la").output
    for entry in rig.ws.iterdir():
        st = entry.lstat()
        assert not stat.S_ISCHR(st.st_mode) and not stat.S_ISBLK(st.st_mode), out
        if stat.S_ISREG(st.st_mode):
            assert st.st_nlink == 1, (entry, out)
    assert not list(rig.ws.glob("hl*")), out


def test_the_sandbox_still_makes_hard_links_inside_the_workspace(rig) -> None:  # type: ignore[no-untyped-def]
    out = rig.run("echo data > a.txt && ln a.txt b.txt && cat b.txt").output
    assert "data" in out, out
    assert (rig.ws / "b.txt").stat().st_nlink == 2


def test_an_append_never_writes_through_a_hard_link(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    store = outside / "store.bin"  # a user's own hard link (pnpm's store, a backup tool): made before kimi
    store.write_bytes(b"\xff\xfe not utf-8, so the append goes to the end of the file\n")
    os.link(store, ws / "linked.bin")
    out, err = call_tool(ws, "WriteFile", {"path": "linked.bin", "content": "appended\n", "mode": "append"})
    assert err and "hard link" in out, out
    assert b"appended" not in store.read_bytes()
    out, err = call_tool(ws, "WriteFile", {"path": "linked.bin", "content": "replaced\n"})  # this name only
    assert not err, out
    assert (ws / "linked.bin").read_text() == "replaced\n" and b"appended" not in store.read_bytes()
    assert b"replaced" not in store.read_bytes()


def test_an_append_to_an_ordinary_binary_file_still_works(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\xff\xfe")
    out, err = call_tool(tmp_path, "WriteFile", {"path": "data.bin", "content": "tail", "mode": "append"})
    assert not err, out
    assert (tmp_path / "data.bin").read_bytes() == b"\xff\xfetail"


def test_a_tracked_file_turned_into_a_fifo_does_not_stop_later_snapshots(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('app')\n")
    (ws / "keep.py").write_text("print('keep')\n")
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    first = shadow.snapshot()
    (ws / "app.py").unlink()
    os.mkfifo(ws / "app.py")  # what a hostile command does before it deletes the rest
    second = shadow.snapshot()
    (ws / "keep.py").unlink()
    third = shadow.snapshot()  # the step that deleted keep.py is covered
    assert [(c.status, c.path) for c in shadow.changes(first, second)] == [("D", "app.py")]
    assert [(c.status, c.path) for c in shadow.changes(second, third)] == [("D", "keep.py")]
    shadow.restore(second)
    assert (ws / "keep.py").read_text() == "print('keep')\n"
    assert stat.S_ISFIFO((ws / "app.py").lstat().st_mode)  # not written through, not replaced blindly


def test_fifos_named_like_sources_and_agents_md_do_not_hang_the_pack(repo: Path, home: Path, env: dict) -> None:
    git(repo, "mv", "README.md", "AGENTS.md")
    git(repo, "commit", "-q", "-m", "agents")
    (repo / "calc.py").unlink()
    os.mkfifo(repo / "calc.py")  # tracked, now a FIFO with no writer: a blocking open would wait forever
    (repo / "AGENTS.md").unlink()
    os.mkfifo(repo / "AGENTS.md")
    (repo / "other.py").write_text("def other():\n    return 1\n")
    proc = run_kimi(["pack", "-f", "text"], repo, env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "def other" in proc.stdout


def test_a_fifo_made_by_a_command_does_not_hang_the_change_note_or_stop_undo(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "rm calc.py && mkfifo calc.py && echo made"}, "Shell:1")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm README.md && echo gone"}, "Shell:2")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "gone" in tool_results(server, 2)[-1]
    undo = subprocess.run(
        [*kimi_executable(), "undo", "--yes"], cwd=repo, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (repo / "README.md").read_text() == "# calc\n"  # the step after the FIFO was covered
