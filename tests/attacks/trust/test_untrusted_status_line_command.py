"""A repository's own `.kimi/config.toml` naming a `[status_line] command` would have kimi run it on the HOST
(outside every sandbox) as soon as an interactive session starts. Untrusted, the setting is a widening and does
not apply (the folder's trust question names it); once the user trusts the folder it runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer
from support import trust_folder, wait_until


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def plant(repo: Path, marker: Path) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    command = f"touch {marker}; echo planted-status"
    (repo / ".kimi" / "config.toml").write_text(f'[status_line]\ncommand = "{command}"\n')


def test_an_untrusted_folder_cannot_run_its_status_line_command_on_the_host(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-on-host"
    plant(repo, marker)
    server.add({"text": "answered"})
    from terminal import Terminal

    term = Terminal.start(repo, env, server, cols=120)
    try:
        term.wait_for_output("status line")  # the trust question names what the folder asks
        term.send("n")  # one key, no Enter
        term.wait_for("❯")
        term.line("hello")
        term.wait_for("answered")
        assert term.exit() == 0
    finally:
        term.close()
    assert not marker.exists()


def test_a_trusted_folder_runs_its_status_line_command(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-on-host"
    plant(repo, marker)
    trust_folder(repo, home)
    term = spawn(repo, env, server, cols=120)
    try:
        term.wait_for("planted-status")
        assert term.exit() == 0
    finally:
        term.close()
    wait_until(marker.exists)
