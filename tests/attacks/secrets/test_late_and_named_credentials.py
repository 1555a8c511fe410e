"""Secrets outside the hidden table's fixed paths: sockets in a home workspace, files named by variables, late files.

- A workspace that is the home folder holds ~/.ssh and ~/.gnupg: reads there were refused, but on landlock
  the connect() supervisor let a command reach their sockets (an ssh ControlMaster: a logged-in session
  to a server, no key needed; gpg-agent), and chmod reached the key.
- Credential files named by an environment variable (GOOGLE_APPLICATION_CREDENTIALS, KUBECONFIG,
  KRB5CCNAME, CARGO_HOME's credentials.toml) were readable wherever they lived.
- A credential made after the session began (`gh auth login` in another terminal) was readable: on bwrap
  always, on landlock when its folder (~/.config) had been granted whole.
- Values on the allowlist that carry a secret the value rules missed: a URL with an empty user
  (https://:TOKEN@host) and settings inside *_OPTS (-Dsonatype.password=...).
Beside each: the legitimate neighbour (a socket of the project, an ordinary config file, -Xmx2g) works.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import UnixServer, backends, make_rig, need_probe

from kimi_cli.sandbox.env import sandbox_env
from kimi_cli.sandbox.hidden import patterns

MARK = "PLANTED-SECRET-"


@pytest.fixture
def var_home() -> Iterator[Path]:
    """A home under /var/tmp: bwrap's private /tmp would hide one under /tmp for the wrong reason."""
    home = Path(tempfile.mkdtemp(prefix="kimi-attack-home-", dir="/var/tmp"))
    os.chmod(home, 0o755)
    (home / ".config" / "tool").mkdir(parents=True)
    (home / ".config" / "tool" / "settings").write_text("LEGIT-SETTINGS\n")
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("backend", backends())
def test_a_home_workspaces_hidden_sockets_and_keys_stay_out_of_reach(backend: str, tmp_path: Path) -> None:
    servers: list[UnixServer] = []

    def prepare(ws: Path) -> None:  # the user runs kimi in ~: ~/.ssh holds a ControlMaster socket
        (ws / ".ssh").mkdir()
        (ws / ".ssh" / "id_ed25519").write_text(f"{MARK}key\n")
        os.chmod(ws / ".ssh" / "id_ed25519", 0o600)
        (ws / ".gnupg").mkdir()
        (ws / "src").mkdir()
        servers.append(UnixServer(str(ws / ".ssh" / "cm-git@github.com:22"), reply=b"outside-session"))
        servers.append(UnixServer(str(ws / ".gnupg" / "S.gpg-agent"), reply=b"outside-agent"))

    rig, _ = make_rig(tmp_path, backend, environ={"HOME": str(tmp_path / "ws")}, prepare=prepare)
    try:
        probe = need_probe(rig)
        result = rig.run(
            f"{probe} connect '.ssh/cm-git@github.com:22'; {probe} connect .gnupg/S.gpg-agent;"
            " cat .ssh/id_ed25519; chmod 644 .ssh/id_ed25519; echo done"
        )
        assert "done" in result.output and "connected" not in result.output and MARK not in result.output
        assert all(s.accepted == 0 for s in servers), result.output
        assert stat.S_IMODE((rig.ws / ".ssh" / "id_ed25519").stat().st_mode) == 0o600
        # In a subfolder: Landlock cannot let new entries appear at the top of a home workspace (docs/sandbox.md).
        wait = "for i in $(seq 100); do [ -S src/app.sock ] && break; sleep 0.05; done"
        legit = rig.run(f"cd src && ../{probe} serve app.sock & {wait}; {probe} connect src/app.sock;"
                        " chmod 600 src/app.sock && echo chmod-ok")  # fmt: skip
        assert "connected: pong" in legit.output and "chmod-ok" in legit.output, legit.output
    finally:
        rig.close()
        for server in servers:
            server.close()


@pytest.mark.parametrize("backend", backends())
def test_credential_files_named_by_environment_variables_are_hidden(
    backend: str, tmp_path: Path, var_home: Path
) -> None:
    place = var_home / "elsewhere"  # not a path of the table: only the variables name these files
    (place / "cargo" / "bin").mkdir(parents=True)
    files = {"sa.json": "GOOGLE_APPLICATION_CREDENTIALS", "kube-a": "KUBECONFIG", "krb5cc_1000": "KRB5CCNAME",
             "cargo/credentials.toml": "CARGO_HOME"}  # fmt: skip
    for i, name in enumerate(files):
        (place / name).write_text(f"{MARK}{i}\n")
    (place / "kube-b").write_text(f"{MARK}b\n")
    (place / "readme.txt").write_text("LEGIT-README\n")
    (place / "cargo" / "bin" / "tool").write_text("LEGIT-CARGO-BIN\n")
    environ = {"HOME": str(var_home), "GOOGLE_APPLICATION_CREDENTIALS": str(place / "sa.json"),
               "KUBECONFIG": f"{place}/kube-a:{place}/kube-b", "KRB5CCNAME": f"FILE:{place}/krb5cc_1000",
               "CARGO_HOME": str(place / "cargo")}  # fmt: skip
    rig, _ = make_rig(tmp_path, backend, environ=environ, env_allow=["CARGO_HOME"])
    try:
        result = rig.run(f"cat {place}/sa.json {place}/kube-a {place}/kube-b {place}/krb5cc_1000"
                         f" {place}/cargo/credentials.toml; echo done")  # fmt: skip
        assert "done" in result.output and MARK not in result.output, result.output
        if backend != "docker":  # Docker mounts no home at all
            legit = rig.run(f"cat {place}/readme.txt {place}/cargo/bin/tool; echo $CARGO_HOME")
            assert "LEGIT-README" in legit.output and "LEGIT-CARGO-BIN" in legit.output, legit.output
    finally:
        rig.close()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # Docker mounts no home
def test_a_credential_made_after_the_session_began_is_hidden(backend: str, tmp_path: Path, var_home: Path) -> None:
    rig, _ = make_rig(tmp_path, backend, environ={"HOME": str(var_home)})
    try:
        assert "LEGIT-SETTINGS" in rig.run(f"cat {var_home}/.config/tool/settings").output
        (var_home / ".config" / "gh").mkdir()
        (var_home / ".config" / "gh" / "hosts.yml").write_text(f"{MARK}gh\n")  # `gh auth login`, elsewhere
        (var_home / ".npmrc").write_text(f"{MARK}npm\n")
        result = rig.run(f"cat {var_home}/.config/gh/hosts.yml {var_home}/.npmrc; echo done")
        assert "done" in result.output and MARK not in result.output, result.output
        assert "LEGIT-SETTINGS" in rig.run(f"cat {var_home}/.config/tool/settings").output
    finally:
        rig.close()


def test_secret_values_the_first_rules_missed_are_withheld() -> None:
    token = "tok" + secrets.token_hex(8)
    environ = {"PIP_INDEX_URL": f"https://:{token}@pypi.example.com/simple",
               "GRADLE_OPTS": f"-Xmx2g -Dorg.gradle.project.sonatypePassword={token}",
               "MAVEN_OPTS": f"-Dgpg.passphrase={token}",
               "JAVA_TOOL_OPTIONS": f"-Djavax.net.ssl.keyStorePassword={token}",
               "PIP_EXTRA_INDEX_URL": "https://download.example.com/whl", "NODE_OPTIONS": "--max-old-space-size=4096",
               "PYTEST_ADDOPTS": "-p no:cacheprovider -k token"}  # fmt: skip
    env, withheld = sandbox_env(environ)
    assert token not in repr(env)
    assert {"PIP_INDEX_URL", "GRADLE_OPTS", "MAVEN_OPTS", "JAVA_TOOL_OPTIONS"} <= set(withheld)
    assert {"PIP_EXTRA_INDEX_URL", "NODE_OPTIONS", "PYTEST_ADDOPTS"} <= set(env)  # the legitimate neighbours
    held = {"GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass", "SSH_ASKPASS": "/usr/bin/ssh-askpass",
            "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE" + token, "NPM_CONFIG__AUTH": token, "VAULT_TOKEN": token,
            "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/sa.json", "npm_config_//registry.npmjs.org/:_authToken": token,
            "CI_JOB_TOKEN": token, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": token}  # fmt: skip
    assert not set(held) & set(sandbox_env(held)[0]), "names the allowlist never had"


def test_variable_entries_of_the_table() -> None:
    home = Path("/home/u")
    environ = {"KUBECONFIG": "/a/b/one:/a/b/two:relative", "KRB5CCNAME": "FILE:/tmp/krb5cc_7", "DOCKER_CONFIG": "/",
               "GNUPGHOME": "/etc", "CARGO_HOME": "/opt/cargo"}  # fmt: skip
    got = patterns(["~/.ssh", "$KUBECONFIG", "$KRB5CCNAME", "$DOCKER_CONFIG", "$GNUPGHOME", "$UNSET",
                    "$CARGO_HOME/credentials.toml", "/etc/shadow"], home, environ)  # fmt: skip
    assert got == ["/home/u/.ssh", "/a/b/one", "/a/b/two", "/tmp/krb5cc_7", "/opt/cargo/credentials.toml",
                   "/etc/shadow"]  # fmt: skip
