"""The environment: secrets that name rules alone would miss never reach a command; a build still works.

Which variables were withheld is the user's notice, once a session, never a tool result: the model hears of a
name only when a command failed and its own output named it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from kimi_cli.sandbox.env import looks_like_credential, sandbox_env

ATTACK_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "DATABASE_URL": "postgres://app:PASSWORD-db-9f8e@db.internal:5432/app",
    "GH_PAT": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "SSH_AUTH_SOCK": "/tmp/ssh-XXXXabcd/agent.4242",
    "NPM_TOKEN": "npm_0123456789abcdefghijABCDEFGHIJ012345",
    "SLACK_WEBHOOK": "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
    "PIP_INDEX_URL": "https://deploy:PIP-PASSWORD-77@pypi.internal/simple",  # an allowed name, a credential value
    "HTTPS_PROXY": "http://me:PROXY-PASSWORD-66@proxy.internal:3128",
    "OPENAI_BASE": "sk-proj-0123456789abcdefghijklmnop",  # a harmless-looking name, a key's value
}
LEGIT_ENV = {"VIRTUAL_ENV": "/opt/venv", "CI": "true", "LANG": "C.UTF-8", "GOPATH": "/opt/go", "MY_PROJECT_MODE": "dev"}
SECRETS = ("IOSFODNN7", "PASSWORD-db-9f8e", "ghp_0123456789", "ssh-XXXXabcd", "npm_0123456789", "B000/XXXX",
           "PIP-PASSWORD-77", "PROXY-PASSWORD-66", "sk-proj-0123")  # fmt: skip


@pytest.fixture(params=backends())
def env_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    rig, _ = make_rig(tmp_path, request.param, environ={**ATTACK_ENV, **LEGIT_ENV})
    yield rig
    rig.close()


def test_credentials_never_reach_a_command_and_build_variables_do(env_rig: Rig) -> None:
    result = env_rig.run("env; echo AGENT=[$SSH_AUTH_SOCK]")
    assert result.output.startswith("exit code: 0")
    for secret in SECRETS:
        assert secret not in result.output, secret
    for name in ATTACK_ENV:
        assert f"\n{name}=" not in result.output, name
    assert "AGENT=[]" in result.output
    if env_rig.backend != "docker":  # the container has its own PATH and HOME and none of the host's variables
        for name in ("VIRTUAL_ENV", "CI", "GOPATH"):
            assert f"\n{name}={LEGIT_ENV[name]}" in result.output, name
    assert "\nPATH=" in result.output and "\nHOME=" in result.output


def test_the_withheld_list_is_told_to_the_user_once_and_never_in_a_tool_result(env_rig: Rig) -> None:
    first = env_rig.run("true").output
    assert "env_allow" not in first and not any(name in first for name in ATTACK_ENV)
    failed = env_rig.run("echo 'no config here' >&2; exit 3").output  # a failure that names no variable
    assert "env_allow" not in failed and not any(name in failed for name in ATTACK_ENV)
    told = env_rig.shell.sandbox.policy.notice.take()  # the session's start notice (terminal, stderr)
    assert "env_allow" in told and "AWS_ACCESS_KEY_ID" in told and "DATABASE_URL" in told
    assert not any(secret in told for secret in SECRETS)  # names only, never a value
    assert env_rig.shell.sandbox.policy.notice.take() == ""  # once


def test_a_command_that_fails_for_a_withheld_variable_is_told_that_one_alone(env_rig: Rig) -> None:
    script = 'test -n "$DATABASE_URL" || { echo "error: DATABASE_URL is not set" >&2; exit 1; }'
    out = env_rig.run(script).output
    assert "[kimi: DATABASE_URL is withheld from sandboxed commands" in out and "env_allow" in out
    assert not any(name in out for name in ATTACK_ENV if name != "DATABASE_URL")  # never the list
    assert "[kimi:" not in env_rig.run(script).output  # told once a session
    ok = env_rig.run("echo AWS_ACCESS_KEY_ID GH_PAT").output  # a success that prints names learns nothing
    assert "[kimi:" not in ok
    assert "[kimi:" not in env_rig.run("echo DATABASE_URLS; exit 1").output  # a whole name, not a prefix


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # docker passes no host variable
def test_env_allow_and_env_deny(backend: str, tmp_path: Path) -> None:
    rig, _ = make_rig(tmp_path, backend, environ={**ATTACK_ENV, **LEGIT_ENV}, env_allow=["MY_PROJECT_*"],
                      env_deny=["CI"])  # fmt: skip
    try:
        out = rig.run("env").output
        assert "\nMY_PROJECT_MODE=dev" in out and "\nCI=" not in out
        assert "DATABASE_URL" in rig.shell.sandbox.policy.notice.take()  # still withheld, and named to the user
    finally:
        rig.close()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # the container has no host HOME
def test_a_build_that_needs_home_and_path_works(backend: str, tmp_path: Path) -> None:
    """A tool found on PATH reading its settings from $HOME, as real builds do. The home lives outside /tmp
    (bwrap gives commands a private /tmp) and exists before the session, as a real one does."""
    home = Path(tempfile.mkdtemp(prefix="kimi-attack-home-", dir="/var/tmp"))
    try:
        (home / ".local" / "bin").mkdir(parents=True)
        tool = home / ".local" / "bin" / "mytool"
        tool.write_text('#!/bin/sh\n. "$HOME/.config/mytool/settings"\necho "built with $greeting" > out.txt\n')
        tool.chmod(0o755)
        (home / ".config" / "mytool").mkdir(parents=True)
        (home / ".config" / "mytool" / "settings").write_text("greeting=hello\n")
        (home / ".ssh").mkdir()  # a hidden folder beside them, as in every real home
        os.chmod(home, 0o755)
        environ = {"HOME": str(home), "PATH": f"{home}/.local/bin:{os.environ['PATH']}", **ATTACK_ENV}
        rig, _ = make_rig(tmp_path, backend, environ=environ)
        try:
            result = rig.run("mytool && cat out.txt")
            assert "built with hello" in result.output, result.output
        finally:
            rig.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_credential_net_catches_values_and_spares_ordinary_ones() -> None:
    by_value = [v for k, v in ATTACK_ENV.items() if k not in ("SSH_AUTH_SOCK", "SLACK_WEBHOOK")]  # withheld by name
    for value in (*by_value, "xoxb-123456789012-abcdefghij", "glpat-abcdefghij0123456789",
                  "github_pat_11ABCDEFG0123456789_abcdefghij", "-----BEGIN OPENSSH PRIVATE KEY-----"):  # fmt: skip
        assert looks_like_credential(value), value
    for value in ("/usr/bin:/bin", "https://pypi.org/simple", "C.UTF-8", "git@github.com:org/repo.git", "sk-short",
                  "postgres://db.internal:5432/app", "true"):  # fmt: skip
        assert not looks_like_credential(value), value
    env, withheld = sandbox_env({"KIMI_API_KEY": "k", "EDITOR": "vi"}, allow=["*"])
    assert "KIMI_API_KEY" not in env and env["EDITOR"] == "vi" and withheld == ()  # not even with allow = ["*"]


def test_a_session_tells_the_user_on_stderr_and_the_model_nothing(repo: Path, env: dict, server) -> None:
    from support import run_kimi, tool_call

    server.add({"tool_calls": [tool_call("Shell", {"command": "true"}, "s1")]}, {"text": "done"})
    proc = run_kimi(["-p", "go"], repo, {**env, "GH_PAT": ATTACK_ENV["GH_PAT"]}, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("withheld from sandboxed commands") == 1 and "GH_PAT" in proc.stderr
    sent = repr(server.requests)
    assert "GH_PAT" not in sent and "env_allow" not in sent
    server.add({"text": "done"})
    proc = run_kimi(["-p", "go", "--output-format", "json"], repo, {**env, "GH_PAT": ATTACK_ENV["GH_PAT"]}, server)
    assert proc.stderr.count("withheld from sandboxed commands") == 1  # json mode: on stderr too
