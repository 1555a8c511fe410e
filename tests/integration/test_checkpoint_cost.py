"""What a checkpoint costs, and that the cheaper path keeps every guarantee (issue 32, step cost).

A snapshot that finds nothing changed starts one git process; one that finds a change starts four; none
starts `git config --list`, because the shadow repository's own info/attributes turns every filter driver
off (host_git.conversions_off). The attack tests: filter drivers declared everywhere a shadow call reads
config (the user's global config and the shadow's own config, as a command that could write it would), with
a .gitattributes that names them (directly, through a macro, in a subfolder), never run; a tampered
info/attributes (a later line naming a driver, a FIFO, a commondir beside it) falls back to neutralising
by name, and the next snapshot puts the file back. Beside them, the legitimate use: the snapshot holds the
bytes on disk, CRLF included, and every kind of change is still seen by the one-process path.

The "after" snapshot and a step's fsync run on the session's worker: a tool-call message is logged only
once they are done, and records(), close() and undo see the deferred record.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.hostsafe.git import host as host_git
from kimi_cli.session.store import Session
from kimi_cli.session.undo.checkpointer import SessionCheckpointer
from kimi_cli.session.undo.points import plan_undo, undo_state
from kimi_cli.session.undo.shadow import ShadowRepo

from support import await_until, marker_script, ran

CRLF = b"line one\r\nline two\r\n"


def count_git(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands host git starts from now on (the real spawn runs; its argv is noted)."""
    started: list[str] = []
    real = host_git.spawn

    def noting(argv: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(next(arg for arg in argv[1:] if not arg.startswith("-")))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(host_git, "spawn", noting)
    return started


def blob(shadow: ShadowRepo, tree: str, path: str) -> bytes:
    entry = next(e for e in shadow._git("ls-tree", "-r", "-z", tree).split("\0") if e.endswith("\t" + path))
    return shadow._blobs([entry.split()[2]])[entry.split()[2]]


@pytest.fixture
def filtered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ShadowRepo, Path, Path]:
    """A workspace whose attributes name filters, and drivers for them in the user's global git config."""
    marks = tmp_path / "marks"
    bin_dir = tmp_path / "bin"
    drivers = {name: marker_script(bin_dir, marks, name) for name in ("global", "macro", "nested", "shadow")}
    home = tmp_path / "userhome"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[filter "glob"]\n\tclean = {drivers["global"]}\n\tsmudge = {drivers["global"]}\n\trequired = true\n'
        f'[filter "mac"]\n\tclean = {drivers["macro"]}\n[filter "nest"]\n\tprocess = {drivers["nested"]}\n'
    )
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".gitattributes").write_text("* filter=glob\n[attr]m filter=mac\n*.txt m text eol=lf ident\n")
    (ws / "sub" / ".gitattributes").write_text("* filter=nest working-tree-encoding=UTF-16\n")
    (ws / "a.txt").write_bytes(CRLF)
    (ws / "b.py").write_bytes(b"print('$Id$')\n")
    (ws / "sub" / "c.txt").write_bytes(CRLF)
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    return ws, shadow, marks, drivers["shadow"]


def test_plain_git_runs_the_planted_filters(filtered: tuple[Path, ShadowRepo, Path, Path]) -> None:
    """The control: git as the user runs it in this workspace starts the drivers."""
    ws, _shadow, marks, _ = filtered
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q"], cwd=ws, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, env=env, capture_output=True, timeout=60)
    assert {"global", "macro"} & set(ran(marks))


def test_snapshots_run_no_filter_and_keep_the_bytes_on_disk(
    filtered: tuple[Path, ShadowRepo, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, shadow, marks, shadow_driver = filtered
    first = shadow.snapshot()
    # A command that could write the shadow's own config declares a driver there too.
    with (shadow.git_dir / "config").open("a") as fh:
        fh.write(f'[filter "glob"]\n\tclean = {shadow_driver}\n\tprocess = {shadow_driver}\n')
    started = count_git(monkeypatch)
    (ws / "a.txt").write_bytes(CRLF + b"three\r\n")
    (ws / "sub" / "d.txt").write_bytes(CRLF)
    second = shadow.snapshot()
    assert ran(marks) == []
    assert "config" not in started
    assert blob(shadow, first, "a.txt") == CRLF  # no eol conversion, no filter: the bytes on disk
    assert blob(shadow, second, "a.txt") == CRLF + b"three\r\n"
    assert blob(shadow, second, "sub/d.txt") == CRLF
    assert blob(shadow, second, "b.py") == b"print('$Id$')\n"  # no ident expansion
    assert shadow.last_corrected == []  # git's read matched the no-follow read: nothing was converted


def test_a_tampered_attributes_file_falls_back_to_names_and_is_put_back(
    filtered: tuple[Path, ShadowRepo, Path, Path],
) -> None:
    ws, shadow, marks, _ = filtered
    shadow.snapshot()
    attributes = shadow.git_dir / "info" / "attributes"
    env = host_git.repo_env(None, (), None, **shadow._paths)
    assert host_git.conversions_off(env) and "filter.glob.clean" not in env["GIT_CONFIG_PARAMETERS"]
    # A later line in the same file wins over ours: the file no longer turns filters off.
    attributes.write_bytes(host_git.NO_CONVERSION_ATTRIBUTES + b"* filter=glob\n")
    env = host_git.repo_env(None, (), None, **shadow._paths)
    assert not host_git.conversions_off(env)
    assert "'filter.glob.clean'=''" in env["GIT_CONFIG_PARAMETERS"]  # neutralised by name instead
    (ws / "a.txt").write_bytes(b"changed\r\n")
    shadow.snapshot()
    assert ran(marks) == []
    assert attributes.read_bytes() == host_git.NO_CONVERSION_ATTRIBUTES
    # A FIFO there is not waited on; a commondir beside it would move info/ elsewhere.
    attributes.unlink()
    os.mkfifo(attributes)
    done = threading.Event()
    result: list[bool] = []
    worker = threading.Thread(target=lambda: (result.append(host_git.conversions_off(env)), done.set()), daemon=True)
    worker.start()
    assert done.wait(10), "conversions_off blocked on a FIFO"
    assert result == [False]
    shadow.snapshot()  # replaced, not written through
    assert attributes.is_file() and host_git.conversions_off(env)
    (shadow.git_dir / "commondir").write_text(str(shadow.git_dir) + "\n")
    assert not host_git.conversions_off(env)
    (shadow.git_dir / "commondir").unlink()
    assert ran(marks) == []


def test_an_unchanged_workspace_costs_one_git_process_and_a_change_four(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(20):
        (ws / f"m{i}.py").write_text(f"x = {i}\n")
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    first = shadow.snapshot()
    started = count_git(monkeypatch)
    assert shadow.snapshot() == first
    assert started == ["ls-files"]
    started.clear()
    (ws / "new.py").write_text("y = 1\n")
    second = shadow.snapshot()
    assert second != first
    assert started == ["ls-files", "add", "write-tree", "diff-tree"]


def test_the_one_process_path_sees_every_kind_of_change(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "same.txt").write_text("aaaa\n")
    (ws / "gone.txt").write_text("bye\n")
    (ws / "d" / "f.txt").write_text("f\n")
    shadow = ShadowRepo(ws, home=tmp_path / "home", max_file_bytes=1000)
    trees = [shadow.snapshot()]

    def changed() -> list[tuple[str, str]]:
        trees.append(shadow.snapshot())
        return [(c.status, c.path) for c in shadow.changes(trees[-2], trees[-1])]

    (ws / "same.txt").write_text("bbbb\n")  # same size, at once (racily clean for git's stat cache)
    assert changed() == [("M", "same.txt")]
    (ws / "gone.txt").unlink()
    assert changed() == [("D", "gone.txt")]
    (ws / "d" / "f.txt").unlink()
    (ws / "d" / "f.txt").symlink_to("../same.txt")  # a file became a link
    assert changed() == [("T", "d/f.txt")]
    (ws / "big.log").write_bytes(b"x" * 2000)  # too large: left out, and the shortcut still holds
    assert changed() == [] and shadow.last_skipped == [("big.log", 2000)]
    assert changed() == [] and shadow.last_skipped == [("big.log", 2000)]
    (ws / "big.log").write_bytes(b"small\n")  # no longer too large: taken up
    assert changed() == [("A", "big.log")] and shadow.last_skipped == []
    subprocess.run(["git", "init", "-q", str(ws / "vendor")], check=True)
    (ws / "vendor" / "lib.py").write_text("v = 1\n")
    assert changed() == [] and shadow.last_nested == ["vendor"]
    assert changed() == [] and shadow.last_nested == ["vendor"]
    subprocess.run(["rm", "-rf", str(ws / "vendor" / ".git")], check=True)  # a folder again: taken up
    assert changed() == [("A", "vendor/lib.py")] and shadow.last_nested == []
    (ws / ".gitignore").write_text("d/\n")  # a tracked file stays tracked when ignored later, as with git add
    assert changed() == [("A", ".gitignore")]


def test_another_process_snapshotting_the_same_shadow_is_noticed(tmp_path: Path) -> None:
    """Two sessions in one workspace share the shadow's index: a snapshot made by the other one means the
    index no longer holds this process's last tree, so the cheap path is not taken."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    mine, theirs = ShadowRepo(ws, home=tmp_path / "home"), ShadowRepo(ws, home=tmp_path / "home")
    base = mine.snapshot()
    (ws / "a.txt").write_text("two, from the other session's step\n")
    other = theirs.snapshot()
    assert other != base
    assert mine.snapshot() == other  # nothing listed as changed against the index, yet not `base`


def session_in(tmp_path: Path) -> Session:
    path = tmp_path / "session"
    path.mkdir()
    return Session(path, {"id": "s", "steps": 0, "usage": {}})


def one_file_session(tmp_path: Path) -> tuple[Path, Session, SessionCheckpointer]:
    """A workspace holding a.txt, a session log, and the checkpointer that snapshots into it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    session = session_in(tmp_path)
    checkpointer = SessionCheckpointer(ShadowRepo(ws, home=tmp_path / "home"), session)
    return ws, session, checkpointer


def test_the_after_snapshot_is_deferred_and_everything_later_waits_for_it(tmp_path: Path) -> None:
    ws, session, checkpointer = one_file_session(tmp_path)

    async def step() -> None:
        checkpointer.mark_turn(0, "edit a")
        assert await checkpointer.snapshot("before", 1, 0, ["WriteFile"])
        (ws / "a.txt").write_text("two\n")
        assert await checkpointer.snapshot("after", 1, 1, ["WriteFile"]) is None  # deferred
        session.end_step(1)  # the fsync and meta.json go on the same worker, after the snapshot
        session.append({"kind": "event", "event": {"type": "step_begin"}})  # events do not wait
        call = {"id": "c", "type": "function", "function": {"name": "ReadFile", "arguments": "{}"}}
        session.append({"kind": "message", "message": {"role": "assistant", "tool_calls": [call]}})
        assert session.pending is None  # the tool calls were logged only after the deferred jobs were done

    asyncio.run(step())
    records = session.records()
    kinds = [(r["kind"], r.get("phase") or (r.get("message") or {}).get("role")) for r in records]
    assert kinds.index(("checkpoint", "after")) < kinds.index(("message", "assistant"))
    assert (session.path / "meta.json").is_file() and '"steps": 1' in (session.path / "meta.json").read_text()
    state = undo_state(records)
    assert [p.kind for p in state.points] == ["turn", "step"]
    plan = plan_undo(checkpointer.shadow, session, 1)
    assert [(c.status, c.path) for c in plan.changes] == [("M", "a.txt")]
    session.close()


def test_close_waits_for_a_deferred_snapshot(tmp_path: Path) -> None:
    ws, session, checkpointer = one_file_session(tmp_path)

    async def step() -> None:
        await checkpointer.snapshot("before", 1, 0, ["Shell"])
        (ws / "b.txt").write_text("new\n")
        await checkpointer.snapshot("after", 1, 1, ["Shell"])

    asyncio.run(step())
    session.close()
    log = (session.path / "context.jsonl").read_text()
    assert '"phase": "after"' in log


def test_a_deferred_snapshot_that_fails_is_logged_and_told_on_the_loop(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session = session_in(tmp_path)
    told: list[tuple[str, bool]] = []
    checkpointer = SessionCheckpointer(ShadowRepo(ws, home=tmp_path / "home"), session)

    async def step() -> None:
        checkpointer.notify = lambda message: told.append((message, threading.current_thread() is main))
        await checkpointer.snapshot("before", 1, 0, ["Shell"])
        (checkpointer.shadow.git_dir / "index").unlink()
        (checkpointer.shadow.git_dir / "index").mkdir()  # git cannot write its index now
        await checkpointer.snapshot("after", 1, 1, ["Shell"])
        session.settle()
        await await_until(lambda: told, 5, "the notice, handed to the loop")

    main = threading.current_thread()
    asyncio.run(step())
    assert [r["phase"] for r in session.records() if r["kind"] == "checkpoint_failed"] == ["after"]
    assert told and told[0][1] and "checkpoint after step 1 failed" in told[0][0]
    session.close()


def test_a_listed_path_gone_before_git_add_falls_back_to_the_whole_tree(tmp_path: Path) -> None:
    """A background command deletes a file between the listing and `git add`: git refuses the pathspec, and
    the snapshot takes the whole tree instead of failing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    first = shadow.snapshot()
    (ws / "new.txt").write_text("new\n")
    shadow._add(["gone-since-the-listing.txt", "new.txt"])
    tree = shadow._git("write-tree").strip()
    assert [(c.status, c.path) for c in shadow.changes(first, tree)] == [("A", "new.txt")]
