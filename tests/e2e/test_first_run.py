"""The first run (issue 46, item 2): interactive `kimi` with no provider set up runs `kimi login`'s own flow in
place, in a pty with an empty HOME, and the session starts with what it saved; `kimi -p` keeps its error."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pexpect
import pytest
from terminal import PROMPT, Terminal

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, run_kimi


def bare_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An empty HOME and no KIMI_* variable: kimi as it is the first time it runs."""
    home = tmp_path / "first-home"
    home.mkdir()
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR", "PYTHONPATH")}
    return {**keep, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "TERM": "xterm-256color", "LANG": "C.UTF-8"}, home


def start(repo: Path, env: dict[str, str], cols: int) -> Terminal:
    exe = kimi_executable()
    child = pexpect.spawn(exe[0], exe[1:], cwd=str(repo), env=env, dimensions=(40, cols), encoding="utf-8",
                          codec_errors="replace", timeout=30)  # fmt: skip
    return Terminal(child, cols, 40)


@pytest.mark.parametrize("cols", [60, 120])
def test_first_run_logs_in_in_place_and_starts_the_session(
    cols: int, repo: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    server.required_key = TEST_KEY
    server.more_models = ["kimi-k2.6"]
    server.add({"text": "set up and answering"}, {"text": "spare"})
    env, home = bare_env(tmp_path)
    term = start(repo, env, cols)
    term.expect_exact("no model provider set up yet")
    term.expect_exact("Which model provider?")
    term.expect(r"provider: 1, 2 or 3 \(Enter = 1\)")
    term.send("2")  # one key, no Enter: an OpenAI-compatible server
    term.expect_exact("base URL")
    term.line(server.base_url)
    term.expect_exact("API key")
    term.line("sk-wrong-key-000000")
    term.expect_exact("refused the key")
    term.expect_exact("API key")
    term.line(TEST_KEY)
    term.expect_exact("the server offers 2 models: kimi-test, kimi-k2.6")
    term.wait_for("↑↓ move")  # the model, picked with the arrows
    term.send("\x1b[B")
    term.send("\r")
    term.expect_exact("model kimi-k2.6")
    term.expect_exact("Starting the session.")
    term.wait_for(PROMPT)
    term.line("hello")
    term.wait_for("set up and answering")
    assert term.exit() == 0
    config = tomllib.loads((home / ".kimi" / "config.toml").read_text())
    assert (config["provider"], config["base_url"], config["api_key"]) == ("openai", server.base_url, TEST_KEY)
    assert config["model"] == "kimi-k2.6"
    assert stat.S_IMODE((home / ".kimi" / "config.toml").stat().st_mode) == 0o600
    assert TEST_KEY not in term.transcript  # typed without echo
    chat = [(h, r) for h, r in zip(server.headers, server.requests, strict=False) if r.get("messages")]
    assert chat and chat[0][0]["authorization"] == f"Bearer {TEST_KEY}" and chat[0][1]["model"] == "kimi-k2.6"


def test_first_run_cancelled_writes_nothing_and_says_how(repo: Path, tmp_path: Path) -> None:
    env, home = bare_env(tmp_path)
    term = start(repo, env, 120)
    term.expect(r"provider: 1, 2 or 3")
    term.send("\x03")  # Ctrl-C: the setup ends, nothing saved, the usual error and exit code
    code = term.wait_exit()
    assert code == 2
    assert "nothing was written" in term.transcript and "kimi login" in term.transcript
    assert not (home / ".kimi" / "config.toml").exists()


def test_headless_run_with_no_provider_keeps_its_error(repo: Path, tmp_path: Path) -> None:
    env, _home = bare_env(tmp_path)
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, env)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "config" and "kimi login" in error["message"]
    assert "Which model provider" not in proc.stdout + proc.stderr  # never asks
