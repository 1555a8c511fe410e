"""File tools on real temporary folders: confinement, bad files, atomic writes, ignore rules."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from kimi_cli.agent.toolbox import default_tools
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.workspace import Workspace

from support import git


def call(root: Path, name: str, args: dict) -> tuple[str, bool]:
    import json

    ctx = ToolContext(workspace=Workspace(root))
    result = asyncio.run(default_tools().call(name, json.dumps(args), ctx))
    return result.output, result.is_error


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    return root


def test_read_file_numbers_lines_and_pages(ws: Path) -> None:
    out, err = call(ws, "ReadFile", {"path": "a.txt", "line_offset": 2, "n_lines": 1})
    assert not err
    assert out.splitlines()[0] == "     2\ttwo"
    assert "showing lines 2-2 of 3" in out


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "sub/../../x"])
def test_paths_outside_the_workspace_are_refused(ws: Path, path: str) -> None:
    out, err = call(ws, "ReadFile", {"path": path})
    assert err and "outside the workspace" in out


def test_write_through_symlink_leading_out_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    out, err = call(ws, "WriteFile", {"path": "link/pwned.txt", "content": "x"})
    assert err and "symlink" in out
    assert not (outside / "pwned.txt").exists()


def test_symlink_loop_gives_an_error_not_a_crash(ws: Path) -> None:
    (ws / "loop1").symlink_to(ws / "loop2")
    (ws / "loop2").symlink_to(ws / "loop1")
    _out, err = call(ws, "ReadFile", {"path": "loop1"})
    assert err


def test_binary_file_is_refused_with_a_clear_message(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    out, err = call(ws, "ReadFile", {"path": "blob.bin"})
    assert err and "binary" in out


def test_non_utf8_is_read_with_a_note_and_refused_for_editing(ws: Path) -> None:
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    out, err = call(ws, "ReadFile", {"path": "latin.txt"})
    assert not err and "not valid UTF-8" in out
    out, err = call(ws, "StrReplaceFile", {"path": "latin.txt", "edit": {"old": "caf", "new": "tea"}})
    assert err and "UTF-8" in out
    assert (ws / "latin.txt").read_bytes() == "café\n".encode("latin-1")


def test_write_file_creates_parents_and_leaves_no_temp_files(ws: Path) -> None:
    _out, err = call(ws, "WriteFile", {"path": "deep/er/new.txt", "content": "hi\n"})
    assert not err
    assert (ws / "deep/er/new.txt").read_text() == "hi\n"
    assert [p.name for p in (ws / "deep/er").iterdir()] == ["new.txt"]


def test_write_file_append_and_keeps_mode(ws: Path) -> None:
    os.chmod(ws / "a.txt", 0o755)
    call(ws, "WriteFile", {"path": "a.txt", "content": "four\n", "mode": "append"})
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\n"
    assert (ws / "a.txt").stat().st_mode & 0o777 == 0o755


def test_str_replace_requires_a_unique_match(ws: Path) -> None:
    (ws / "d.txt").write_text("x = 1\nx = 1\n")
    out, err = call(ws, "StrReplaceFile", {"path": "d.txt", "edit": {"old": "x = 1", "new": "x = 2"}})
    assert err and "occurs 2 times" in out
    out, err = call(
        ws, "StrReplaceFile", {"path": "d.txt", "edit": {"old": "x = 1", "new": "x = 2", "replace_all": True}}
    )
    assert not err and (ws / "d.txt").read_text() == "x = 2\nx = 2\n"


def test_str_replace_several_edits_apply_all_or_none(ws: Path) -> None:
    edits = [{"old": "one", "new": "1"}, {"old": "missing", "new": "?"}]
    out, err = call(ws, "StrReplaceFile", {"path": "a.txt", "edits": edits})
    assert err and "edit 2" in out
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_glob_and_grep_respect_gitignore(ws: Path) -> None:
    git(ws, "init", "-q")
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "gen.py").write_text("needle\n")
    (ws / "x.log").write_text("needle\n")
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("a\nneedle here\nb\n")
    out, _ = call(ws, "Glob", {"pattern": "**/*.py"})
    assert out.splitlines() == ["src/m.py"]
    out, _ = call(ws, "Grep", {"pattern": "needle", "context": 1})
    assert out.splitlines() == ["src/m.py-1-a", "src/m.py:2:needle here", "src/m.py-3-b"]


def test_grep_without_git_uses_gitignore_too(ws: Path) -> None:
    (ws / ".gitignore").write_text("skip/\n")
    (ws / "skip").mkdir()
    (ws / "skip" / "f.txt").write_text("needle\n")
    (ws / "keep.txt").write_text("needle\n")
    out, _ = call(ws, "Grep", {"pattern": "NEEDLE", "ignore_case": True})
    assert out.splitlines() == ["keep.txt:1:needle"]


def test_bad_regex_is_an_error(ws: Path) -> None:
    out, err = call(ws, "Grep", {"pattern": "("})
    assert err and "invalid regex" in out


def test_read_media_file_refuses_non_images(ws: Path) -> None:
    out, err = call(ws, "ReadMediaFile", {"path": "a.txt"})
    assert err and "unsupported image format" in out


def test_every_schema_property_has_a_type() -> None:
    def walk(node: object) -> None:
        if isinstance(node, dict):
            for prop in (node.get("properties") or {}).values():
                assert "type" in prop, prop
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for schema in default_tools().schemas():
        params = schema["function"]["parameters"]
        assert params["type"] == "object"
        assert "$ref" not in str(params) and "$defs" not in params
        walk(params)
