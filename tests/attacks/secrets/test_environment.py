"""The environment: secrets that name rules alone would miss never reach a command; a build still works.

The first command of a session says once which variables were withheld, and names the setting.
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


def test_the_first_command_says_once_what_was_withheld_and_how_to_pass_it(env_rig: Rig) -> None:
    first = env_rig.run("true").output
    assert "env_allow" in first and "AWS_ACCESS_KEY_ID" in first and "DATABASE_URL" in first
    assert not any(secret in first for secret in SECRETS)  # names only, never a value
    assert "env_allow" not in env_rig.run("true").output


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # docker passes no host variable
def test_env_allow_and_env_deny(backend: str, tmp_path: Path) -> None:
    rig, _ = make_rig(tmp_path, backend, environ={**ATTACK_ENV, **LEGIT_ENV}, env_allow=["MY_PROJECT_*"],
                      env_deny=["CI"])  # fmt: skip
    try:
        out = rig.run("env").output
        assert "\nMY_PROJECT_MODE=dev" in out and "\nCI=" not in out
        assert "DATABASE_URL" in out.split("[kimi:")[-1]  # still withheld, and named in the notice
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
