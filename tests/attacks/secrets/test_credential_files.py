"""Credential files: every entry of the hidden table (hidden_paths.txt) stays unreadable, on every backend.

The home lives under /var/tmp, not /tmp: bwrap gives commands a private /tmp, which would hide a home
there for the wrong reason. Beside the attack: ordinary dotfiles in the same home stay readable.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from kimi_cli.sandbox.backends.landlock.rules import landlock_plan
from kimi_cli.sandbox.hidden import default_entries, expand, homes
from kimi_cli.sandbox.policy import build_policy

MARK = "CREDENTIAL-MARK-"
# Entries that are single files in real life; every other entry is a folder (a secret file goes inside).
FILES = {"~/.git-credentials", "~/.config/git/credentials", "~/.npmrc", "~/.yarnrc*", "~/.pypirc", "~/.netrc",
         "~/.cargo/credentials*", "~/.gem/credentials", "~/.config/pip/pip.conf", "~/.m2/settings.xml",
         "~/.gradle/gradle.properties", "~/.nuget/NuGet/NuGet.Config", "~/.s3cfg", "~/.boto", "~/.vault-token",
         "~/.pgpass", "~/.my.cnf", "~/.bash_history", "~/.zsh_history", "~/.python_history", "~/.psql_history",
         "~/.mysql_history", "~/.node_repl_history", "~/.local/share/fish/fish_history"}  # fmt: skip


def plant(home: Path) -> list[Path]:
    """A secret at every home entry of the table (a glob's `*` dropped: ~/.yarnrc* plants ~/.yarnrc)."""
    planted = []
    for i, entry in enumerate(e for e in default_entries() if e.startswith("~/")):
        path = home / entry[2:].replace("*", "")
        if entry in FILES:
            path.parent.mkdir(parents=True, exist_ok=True)
            secret = path
        else:
            path.mkdir(parents=True, exist_ok=True)
            secret = path / "secret"
        secret.write_text(f"{MARK}{i}\n")
        planted.append(secret)
    (home / ".yarnrc.yml").write_text(f"{MARK}yml\n")  # the glob's other match
    return planted


@pytest.fixture
def credential_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="kimi-attack-home-", dir="/var/tmp"))
    os.chmod(home, 0o755)
    plant(home)
    (home / ".bashrc").write_text("LEGIT-BASHRC\n")
    (home / ".config" / "tool").mkdir(parents=True)
    (home / ".config" / "tool" / "settings").write_text("LEGIT-SETTINGS\n")
    (home / ".gitconfig").write_text("[user]\n\tname = LEGIT-GITCONFIG\n")
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(params=backends())
def home_rig(request: pytest.FixtureRequest, tmp_path: Path, credential_home: Path) -> Iterator[Rig]:
    rig, _ = make_rig(tmp_path, request.param, environ={"HOME": str(credential_home)})
    yield rig
    rig.close()


def test_no_credential_file_of_the_table_can_be_read(home_rig: Rig, credential_home: Path) -> None:
    home = credential_home
    result = home_rig.run(f"grep -r -h {MARK} {home} 2>/dev/null; cat {home}/.yarnrc.yml {home}/.npmrc; echo done")
    assert "done" in result.output
    assert MARK not in result.output, result.output
    if home_rig.backend != "docker":  # Docker mounts no home at all
        legit = home_rig.run(f"cat {home}/.bashrc {home}/.config/tool/settings {home}/.gitconfig")
        assert all(m in legit.output for m in ("LEGIT-BASHRC", "LEGIT-SETTINGS", "LEGIT-GITCONFIG")), legit.output


def test_the_systems_own_secrets_are_hidden_from_root(rig: Rig) -> None:
    shadow = Path("/etc/shadow")
    try:
        first = shadow.read_text().splitlines()[0]
    except (OSError, IndexError):
        pytest.skip("/etc/shadow is unreadable to this user anyway (not root)")
    result = rig.run("cat /etc/shadow; head -c 200 /etc/gshadow; echo done")
    assert "done" in result.output and first not in result.output


def test_every_backend_takes_the_hidden_paths_from_the_one_table(credential_home: Path, tmp_path: Path) -> None:
    """The table is data: the policy expands it once and bwrap, Landlock and Docker all read policy.hidden."""
    from kimi_cli.sandbox.backends.bwrap import bwrap_argv
    from kimi_cli.sandbox.backends.docker import container_options

    ws = tmp_path / "ws"
    ws.mkdir()
    policy = build_policy(ws, tmp_path / "t", environ={"HOME": str(credential_home)})
    hidden = {h.path for h in policy.hidden}
    from kimi_cli.util.paths import private_dirs

    assert set(expand([*default_entries(), *map(str, private_dirs())], homes(credential_home))) >= hidden >= {
        credential_home / ".yarnrc", credential_home / ".yarnrc.yml", credential_home / ".kube",
        credential_home / ".config" / "gh", credential_home / ".mozilla", credential_home / ".cargo" / "credentials",
    }  # fmt: skip
    argv = " ".join(bwrap_argv(policy, ["true"], masks=([], [])))
    assert all(f" {path} " in argv + " " for path in hidden)
    granted = [g.path for g in landlock_plan(policy, 7).grants]
    assert not any(g == str(h) or g.startswith(f"{h}/") for h in hidden for g in granted)
    assert set(container_options(policy, "img", "1g", 64, "s")["volumes"]) == {str(ws)}  # nothing outside at all


@pytest.mark.parametrize("name", [".kimi", ".git"])
@pytest.mark.parametrize("backend", backends())
def test_a_protected_name_that_is_a_link_to_a_secret_exposes_nothing(
    backend: str, name: str, tmp_path: Path, credential_home: Path
) -> None:
    """A cloned repository may ship `.kimi` (or `.git`) as a link to ~/.ssh: mounting it read-only would
    mount the link's target, the secret, into the sandbox (Docker resolves the host side of a bind)."""
    target = credential_home / ".ssh"
    (target / "id_ed25519").write_text(f"{MARK}ssh\n")

    def prepare(ws: Path) -> None:
        if name == ".git":
            shutil.rmtree(ws / ".git")
        (ws / name).symlink_to(target)

    rig, _ = make_rig(tmp_path, backend, environ={"HOME": str(credential_home)}, prepare=prepare)
    try:
        result = rig.run(f"cat {name}/id_ed25519 {name}/secret; ls {name}/; echo done")
        assert "done" in result.output and MARK not in result.output, result.output
    finally:
        rig.close()


@pytest.mark.parametrize("backend", backends())
def test_kimi_started_in_the_home_folder_still_hides_its_secrets(backend: str, tmp_path: Path) -> None:
    """The workspace is the home itself: hidden paths inside the writable workspace stay hidden there too."""

    def prepare(ws: Path) -> None:
        (ws / ".ssh").mkdir()
        (ws / ".ssh" / "id_rsa").write_text(f"{MARK}home-ws\n")
        (ws / ".npmrc").write_text(f"{MARK}npmrc\n")
        (ws / "notes.txt").write_text("LEGIT-NOTES\n")

    rig, _ = make_rig(tmp_path, backend, environ={"HOME": str(tmp_path / "ws")}, prepare=prepare)
    try:
        result = rig.run("cat .ssh/id_rsa .npmrc; cat notes.txt; echo more >> notes.txt && echo wrote")
        assert MARK not in result.output, result.output
        assert "LEGIT-NOTES" in result.output and "wrote" in result.output
    finally:
        rig.close()


@pytest.mark.parametrize("backend", backends())
def test_kimis_own_folders_are_hidden_wherever_they_live(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIMI_HOME (the API key, sessions, trusted folders) and the cache (other projects' packs) may live
    outside ~/.kimi: they are hidden there too."""
    elsewhere = Path(tempfile.mkdtemp(prefix="kimi-attack-kimihome-", dir="/var/tmp"))
    try:
        (elsewhere / "home").mkdir()
        (elsewhere / "home" / "config.toml").write_text(f'api_key = "{MARK}kimi-home"\n')
        (elsewhere / "cache" / "kimi").mkdir(parents=True)
        (elsewhere / "cache" / "kimi" / "pack.json").write_text(f"{MARK}cache\n")
        monkeypatch.setenv("KIMI_HOME", str(elsewhere / "home"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(elsewhere / "cache"))
        rig, _ = make_rig(tmp_path, backend)
        try:
            result = rig.run(f"cat {elsewhere}/home/config.toml {elsewhere}/cache/kimi/pack.json; echo done")
            assert "done" in result.output and MARK not in result.output, result.output
        finally:
            rig.close()
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
