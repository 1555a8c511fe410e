"""Workspace files kimi reads on the host, beyond the settings files: bounded, never blocking.

The settings reader (settings_read.py) makes `.kimi/config.toml`, `mcp.json`, commands, skills and Claude
Code's settings regular-files-only, non-blocking and capped. Other files the workspace controls, unguarded,
would be read with a plain open/read at start:

- `.git/modules/NAME/config` (kimi_cli/sandbox/guard/restore.py, `submodule_pointers`, read at session start on the
  host): a link to /dev/zero reads until MemoryError; a FIFO blocks the start. A repository shipped as a
  folder carries its `.git`, and in a folder that was not a repository a sandboxed command makes one that the
  next session reads.
  Links looping inside `.git/modules` (`x/a -> .`, three of them) make its walk visit 3**40 folders.
- an image the prompt names (`@shot.png`) or `--image` (kimi_cli/frontends/attachments.py `check_attachments`): a FIFO
  blocks the start forever (plain `open`).
- `--output-schema schema.json` kept in the repository (kimi_cli/frontends/headless/output_schema.py):
  a FIFO blocks; a link to /dev/zero reads until MemoryError.

Runs here have a 4 GB address-space limit and a timeout, so a regression fails fast. Beside them: the same
files, when real, still work.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5b1a1e90000000049454e44ae426082"
)


def bounded(
    args: list[str], repo: Path, env: dict, server: ScriptedModelServer, timeout: float = 40
) -> subprocess.CompletedProcess[str] | None:
    """kimi -p under a 4 GB address-space limit; None when it was still running after `timeout` s (hung)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    try:
        return subprocess.run([*kimi_executable(), *args], cwd=repo, env=full, input="", capture_output=True,
                              text=True, timeout=timeout, preexec_fn=limit)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None


def assert_clean(proc: subprocess.CompletedProcess[str] | None, what: str) -> None:
    assert proc is not None, f"kimi hung on {what}"
    out = proc.stdout + proc.stderr
    assert "MemoryError" not in out and "Traceback" not in out, f"{what}: {out[-1500:]}"


def plant_module(repo: Path, config: str) -> Path:
    """.git/modules/lib as a submodule's git dir: HEAD, and `config` as given ("zero", "fifo" or text)."""
    module = repo / ".git" / "modules" / "lib"
    module.mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/main\n")
    if config == "zero":
        (module / "config").symlink_to("/dev/zero")
    elif config == "fifo":
        os.mkfifo(module / "config")
    else:
        (module / "config").write_text(config)
    return module


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_a_submodule_git_dir_config_that_is_dev_zero_or_a_fifo_does_not_hang_or_eat_memory(
    kind: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    plant_module(repo, kind)
    server.add({"text": "hello"})
    proc = bounded(["-p", "hi"], repo, env, server, timeout=10)
    assert_clean(proc, f".git/modules/lib/config as {kind}")
    assert proc is not None and proc.returncode == 0 and "hello" in proc.stdout, proc and proc.stderr[-1500:]


def test_links_looping_inside_git_modules_do_not_hang_the_start(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """.git/modules/x/{a,b,c} -> . : the walk in submodule_pointers follows every link, 3**40 folders."""
    folder = repo / ".git" / "modules" / "x"
    folder.mkdir(parents=True)
    for name in "abc":
        (folder / name).symlink_to(".")
    server.add({"text": "hello"})
    proc = bounded(["-p", "hi"], repo, env, server, timeout=10)
    assert_clean(proc, "links looping in .git/modules")
    assert proc is not None and proc.returncode == 0 and "hello" in proc.stdout


def test_a_real_submodule_git_dir_config_is_still_read(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    plant_module(repo, "[core]\n\tworktree = ../../../lib\n")
    server.add({"text": "hello"})
    proc = bounded(["-p", "hi"], repo, env, server)
    assert_clean(proc, "a real module config")
    assert proc is not None and proc.returncode == 0 and "hello" in proc.stdout


@pytest.mark.parametrize("how", ["at", "flag"])
def test_an_image_that_is_a_fifo_is_refused_without_blocking(
    how: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    os.mkfifo(repo / "shot.png")
    args = ["-p", "what is in @shot.png"] if how == "at" else ["-p", "what is in it", "--image", "shot.png"]
    proc = bounded(args, repo, env, server, timeout=10)
    assert_clean(proc, f"a FIFO image ({how})")
    assert proc is not None and proc.returncode == 2 and "shot.png" in proc.stderr


def test_a_real_image_is_still_attached(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "shot.png").write_bytes(PNG)
    server.add({"text": "a pixel"})
    proc = bounded(["-p", "what is in @shot.png"], repo, env, server)
    assert_clean(proc, "a real image")
    assert proc is not None and proc.returncode == 0, proc.stderr[-1500:]
    assert "image_url" in json.dumps(server.requests[0]["messages"])


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_an_output_schema_file_that_is_dev_zero_or_a_fifo_is_a_usage_error(
    kind: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    if kind == "zero":
        (repo / "schema.json").symlink_to("/dev/zero")
    else:
        os.mkfifo(repo / "schema.json")
    proc = bounded(["-p", "hi", "--output-schema", "schema.json"], repo, env, server, timeout=10)
    assert_clean(proc, f"--output-schema as {kind}")
    assert proc is not None and proc.returncode == 2 and "schema.json" in proc.stderr


def test_a_real_output_schema_still_applies(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "schema.json").write_text(json.dumps({"type": "object", "required": ["ok"]}))
    server.add({"text": '{"ok": true}'})
    proc = bounded(["-p", "hi", "--output-schema", "schema.json"], repo, env, server)
    assert_clean(proc, "a real schema")
    assert proc is not None and proc.returncode == 0, proc.stderr[-1500:]
