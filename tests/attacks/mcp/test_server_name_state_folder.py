"""A server's name picks its state folder, ~/.kimi/mcp/<name>/, the sandboxed server's HOME and only writable folder.

".." made that folder ~/.kimi itself (writable: a new ~/.kimi/mcp.json there is the user's own config next time,
where "sandbox": false runs on the host) and "." made it ~/.kimi/mcp (every other server's state). Names that the
file-name form changed ("a/b", "a b") shared one folder with "a_b". A changed name now gets its own folder, marked
by a digest of the name; a plain name keeps its folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.sandboxed import server_policy, state_dir


@pytest.fixture
def kimi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    return tmp_path / "kimi"


@pytest.mark.parametrize("name", ["..", ".", "...", "", "../..", "../config"])
def test_a_dotted_name_writes_only_below_its_own_folder(kimi_home: Path, tmp_path: Path, name: str) -> None:
    policy = server_policy(name, ServerConfig(command="true"), tmp_path, environ={"PATH": "/bin"})
    root = policy.workspace.resolve()
    assert root.parent == (kimi_home / "mcp").resolve(), (name, root)
    assert Path(policy.env["HOME"]).resolve() == root


def test_names_the_file_form_changes_get_folders_of_their_own(kimi_home: Path) -> None:
    folders = {state_dir(name).resolve() for name in ("a_b", "a/b", "a b", "a\nb")}
    assert len(folders) == 4


def test_a_plain_name_keeps_its_folder(kimi_home: Path) -> None:
    assert state_dir("github").resolve() == (kimi_home / "mcp" / "github").resolve()
    assert state_dir("my-server.v2").name == "my-server.v2"
