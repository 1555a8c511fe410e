"""Settings files a repository ships are read within bounds: a link to /dev/zero or a FIFO never hangs kimi
or eats the machine's memory.

Every file kimi reads at start from the workspace (`.kimi/config.toml`, `.kimi/mcp.json`, an `mcp_config`
file, commands, skills, Claude Code's `.claude/settings.json`) was read whole with a plain read. A cloned
repository that ships one as a link to /dev/zero made `kimi -p` grow until MemoryError (with no memory limit:
until the kernel killed something); a FIFO made it block forever at start. Each is now a regular file or
nothing, within a size cap (kimi_cli/hostsafe/settings_read.py). Runs here have a 4 GB address-space limit, so a
regression fails fast instead of taking the CI machine down.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, tool_call

LINKED = [".kimi/config.toml", ".kimi/mcp.json", ".kimi/commands/fix.md", ".kimi/skills/s/SKILL.md",
          ".claude/settings.json", ".claude/settings.local.json", ".claude/commands/go.md", "servers.json"]  # fmt: skip


def bounded(args: list[str], repo: Path, env: dict, server: ScriptedModelServer) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    return subprocess.run([*kimi_executable(), *args], cwd=repo, env=full, input="", capture_output=True, text=True,
                          timeout=120, preexec_fn=limit)  # fmt: skip


@pytest.mark.parametrize("rel", LINKED)
def test_a_settings_file_linked_to_dev_zero_is_refused_and_kimi_goes_on_or_stops_cleanly(
    rel: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    if rel == "servers.json":  # a trusted folder's mcp_config names it
        (repo / ".kimi" / "config.toml").write_text('mcp_config = ["servers.json"]\n')
    target = repo / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to("/dev/zero")
    server.add({"text": "hello"})
    proc = bounded(["-p", "hi", "--trust"], repo, env, server)
    out = proc.stdout + proc.stderr
    assert "MemoryError" not in out and "Traceback" not in out, out[-2000:]
    if proc.returncode != 0:  # a file kimi must have (an MCP config) stops the run with the file named
        assert proc.returncode == 2 and "not a regular file" in proc.stderr, out[-2000:]
    else:
        assert "hello" in proc.stdout


def test_a_fifo_for_a_config_file_does_not_block_the_start(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "config.toml").write_text('mcp_config = ["pipe.json"]\n')
    os.mkfifo(repo / "pipe.json")
    os.mkfifo(repo / ".kimi" / "mcp.json")
    proc = bounded(["-p", "hi", "--trust"], repo, env, server)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr[-2000:]


def test_settings_linked_to_real_files_elsewhere_still_apply(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The legitimate use beside it: a project's config kept in a shared folder and linked in."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "kimi.toml").write_text('model = "team-model"\n')
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").symlink_to(shared / "kimi.toml")
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r")]}, {"text": "done"})
    proc = bounded(["-p", "hi"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["model"] == "team-model"
