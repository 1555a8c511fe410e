"""~/.kimi and the cache are private: created 0700, files 0600, loose modes from older versions tightened
at start; the workspace's own files keep the user's umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_session_leaves_only_private_files_under_kimi_home_and_the_cache(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    (home / ".kimi").chmod(0o755)
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "out.txt", "content": "x\n"}, "w1")]}, {"text": "ok"})
    proc = run_kimi(["-p", "write", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert mode(home / ".kimi") == 0o700 and mode(home / ".cache" / "kimi") == 0o700
    session_files = [p for p in (home / ".kimi" / "sessions").rglob("*") if p.is_file()]
    assert session_files and all(mode(p) == 0o600 for p in session_files), [(p, oct(mode(p))) for p in session_files]
    assert all(mode(p) == 0o700 for p in (home / ".kimi" / "sessions").rglob("*") if p.is_dir())
    packs = [p for p in (home / ".cache" / "kimi").rglob("*") if p.is_file()]
    assert packs  # the pack cache exists, inside the 0700 folder


def test_loose_modes_from_an_older_version_are_tightened_at_start(repo: Path, env: dict, home: Path) -> None:
    kimi = home / ".kimi"
    (kimi / "mcp.json").write_text('{"mcpServers": {}}')
    (kimi / "trusted.json").write_text("{}")
    (kimi / "logs").mkdir()
    (kimi / "sessions").mkdir()
    for path, loose in ((kimi, 0o755), (kimi / "mcp.json", 0o644), (kimi / "trusted.json", 0o664),
                        (kimi / "logs", 0o775), (kimi / "sessions", 0o755)):  # fmt: skip
        path.chmod(loose)
    proc = run_kimi(["sessions"], repo, env)
    assert proc.returncode == 0, proc.stderr
    assert mode(kimi) == 0o700 and mode(kimi / "logs") == 0o700 and mode(kimi / "sessions") == 0o700
    assert mode(kimi / "mcp.json") == 0o600 and mode(kimi / "trusted.json") == 0o600
    assert mode(kimi / "config.toml") == 0o600


def test_workspace_files_keep_the_users_umask(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "made.txt", "content": "x\n"}, "w1")]}, {"text": "ok"})
    old = os.umask(0o022)
    try:
        proc = run_kimi(["-p", "write"], repo, env, server)
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert mode(repo / "made.txt") == 0o644
