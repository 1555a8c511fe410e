"""`kimi login`: the first-run setup, in a pty against the scripted server (which can require a key on
/v1/models) and against a real llama-server (interop), and as a script (`--api-key-stdin`)."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pexpect
import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, free_port, kimi_executable, run_kimi


def login(repo: Path, env: dict, *args: str) -> pexpect.spawn:
    exe = kimi_executable()
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    return pexpect.spawn(exe[0], [*exe[1:], "login", *args], cwd=str(repo), env={**clean, "TERM": "dumb"},
                         encoding="utf-8", timeout=30, dimensions=(40, 100))  # fmt: skip


def config_of(home: Path) -> dict:
    return tomllib.loads((home / ".kimi" / "config.toml").read_text())


def test_login_asks_checks_the_key_against_models_and_writes_a_private_config(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.required_key = TEST_KEY
    child = login(repo, env)
    child.expect("Which model provider")
    child.expect(r"provider: 1, 2 or 3 \(Enter = 1\)")
    child.send("2")  # one key, no Enter (issue 46, item 3): an OpenAI-compatible server
    child.expect("base URL")
    child.sendline(server.base_url)
    child.expect("API key")
    child.sendline("sk-wrong-key-000000")
    child.expect("refused the key")
    child.expect("API key")
    child.sendline(TEST_KEY)
    child.expect("the server offers 1 model: kimi-test")
    child.expect("saved to")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert TEST_KEY not in (child.before or "")  # the key was never echoed
    path = home / ".kimi" / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = config_of(home)
    assert (config["provider"], config["base_url"], config["model"]) == ("openai", server.base_url, "kimi-test")
    assert config["api_key"] == TEST_KEY
    assert config["retry"]["base_delay"] == 0.01  # what was in the file before is kept
    server.add({"text": "logged in and working"})
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    proc = run_kimi(["-p", "hi"], repo, clean)  # no KIMI_* variables: the config alone
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "logged in and working"
    assert server.headers[-1]["authorization"] == f"Bearer {TEST_KEY}"


def test_login_from_a_script_reads_the_key_from_stdin(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.required_key = TEST_KEY
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    args = ["login", "--provider", "openai", "--base-url", server.base_url, "--api-key-stdin"]
    bad = run_kimi(args, repo, clean, input="sk-not-this-one-0000\n")
    assert bad.returncode == 2 and "refused the key" in bad.stderr and "nothing was written" in bad.stderr
    assert "api_key" not in (home / ".kimi" / "config.toml").read_text()
    good = run_kimi(args, repo, clean, input=TEST_KEY + "\n")
    assert good.returncode == 0, good.stderr
    assert config_of(home)["api_key"] == TEST_KEY


def test_login_to_nothing_listening_writes_nothing(repo: Path, env: dict, home: Path) -> None:
    before = (home / ".kimi" / "config.toml").read_text()
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = run_kimi(["login", "--provider", "openai", "--base-url", url, "--api-key-stdin"], repo, clean, input="\n")
    assert proc.returncode == 5 and "cannot reach" in proc.stderr
    assert (home / ".kimi" / "config.toml").read_text() == before


def test_moonshot_needs_a_key_and_the_no_key_error_names_login(repo: Path, env: dict) -> None:
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    proc = run_kimi(["login", "--provider", "moonshot", "--api-key-stdin"], repo, clean, input="\n")
    assert proc.returncode == 2 and "needs a key" in proc.stderr
    no_key = run_kimi(["-p", "hi"], repo, clean)
    assert no_key.returncode == 2 and "kimi login" in no_key.stderr


@pytest.mark.timeout(300)  # llama-server's start included
@pytest.mark.interop
def test_login_against_llama_server(repo: Path, env: dict, home: Path, llama_server: str) -> None:
    child = login(repo, env, "--provider", "openai")
    child.expect("base URL")
    child.sendline(llama_server)
    child.expect("API key")
    child.sendline("")  # llama-server needs none
    child.expect(r"the server offers 1 model: (\S+)")
    served = child.match.group(1)
    child.expect("saved to")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    config = config_of(home)
    assert config["base_url"] == llama_server and config["model"] == served and "api_key" not in config
    clean = {k: v for k, v in env.items() if not k.startswith("KIMI_")}
    version = run_kimi(["doctor"], repo, clean)
    assert llama_server in version.stdout, version.stdout
