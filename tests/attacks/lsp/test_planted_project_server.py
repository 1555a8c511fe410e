"""A project's own language server (node_modules/.bin/typescript-language-server, .venv/bin/...) is a program the
workspace controls: a cloned repository ships it, a sandboxed command can write it. kimi runs one only in a
trusted folder, only while it is the file the user trusted, and only in the sandbox.

The attacks: a planted server in an untrusted folder (it would run at the first edit of a .ts file); one
swapped after the folder was trusted; a trusted one trying to write outside the workspace. Beside them, the
legitimate use: the trusted project's own server runs, and its diagnostics come back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_support import NODE_BIN, lsp_backends, make_lsp_rig, need, with_node_servers

from kimi_cli.extensions.lsp.project import trusted_pins
from kimi_cli.hostsafe import trust

from support import run_kimi, tool_call, tool_results

pytestmark = pytest.mark.timeout(300)

TS_BAD = "const n: number = 'text';\nexport default n;\n"


def trusted(ws: Path) -> trust.FolderTrust:
    """The folder as a session trusted with --trust sees it (not remembered: the test's home is not kimi's)."""
    state = trust.assess(ws)
    state.trusted, state.how = True, "--trust"
    return state


def plant(ws: Path, outside: Path, real: bool = True) -> Path:
    """node_modules/.bin/typescript-language-server that leaves a mark in the workspace, tries to write
    `outside`, then (real) becomes the real server."""
    bin_dir = ws / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "typescript-language-server"
    then = f'exec {NODE_BIN / "typescript-language-server"} "$@"' if real else "exit 0"
    script.write_text(f"#!/bin/sh\necho ran >> {ws / 'planted-ran'}\necho x > {outside} 2>/dev/null\n{then}\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_planted_server_in_an_untrusted_folder_never_runs(tmp_path: Path, backend: str) -> None:
    need("typescript-language-server")
    plant(tmp_path / "ws", tmp_path / "outside-mark")
    state = trust.assess(tmp_path / "ws")
    rig = make_lsp_rig(tmp_path, backend, pins=trusted_pins(state))
    assert not state.trusted and any(w.key == "lsp:project:node_modules/.bin/typescript-language-server"
                                     for w in state.asks)  # the question names it  # fmt: skip
    (rig.ws / "app.ts").write_text("export default 1;\n")
    try:
        rig.read("app.ts")
        rig.wait_running("typescript-language-server")
        added, _ = rig.write("app.ts", TS_BAD)
        assert "[TS2322]" in added  # the user's own server answered
        assert rig.manager.servers["typescript-language-server"].located.source == "user"
        assert not (rig.ws / "planted-ran").exists()
    finally:
        rig.close()


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_trusted_project_server_runs_in_the_sandbox(tmp_path: Path, backend: str) -> None:
    need("typescript-language-server")
    ws = tmp_path / "ws"
    ws.mkdir()
    plant(ws, tmp_path / "home" / "outside-mark")
    state = trusted(ws)
    rig = make_lsp_rig(tmp_path, backend, pins=trusted_pins(state))
    (rig.ws / "app.ts").write_text("export default 1;\n")
    try:
        rig.read("app.ts")
        rig.wait_running("typescript-language-server")
        added, _ = rig.write("app.ts", TS_BAD)
        assert "[TS2322]" in added, added
        assert rig.manager.servers["typescript-language-server"].located.source == "project"
        assert (rig.ws / "planted-ran").read_text() == "ran\n"  # the project's own server ran ...
        assert not (tmp_path / "home" / "outside-mark").exists()  # ... and could not write outside the workspace
    finally:
        rig.close()


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_project_server_swapped_after_trust_is_not_run(tmp_path: Path, backend: str) -> None:
    need("typescript-language-server")
    ws = tmp_path / "ws"
    ws.mkdir()
    script = plant(ws, tmp_path / "outside-mark", real=False)
    state = trusted(ws)
    script.write_text(script.read_text().replace("exit 0", "exit 1"))  # a command rewrote it since
    rig = make_lsp_rig(tmp_path, backend, pins=trusted_pins(state))
    (rig.ws / "app.ts").write_text("export default 1;\n")
    try:
        rig.read("app.ts")
        rig.wait_running("typescript-language-server")
        assert rig.manager.servers["typescript-language-server"].located.source == "user"
        assert "not the file trusted" in " ".join(rig.manager.choose("typescript").missing)
        assert not (rig.ws / "planted-ran").exists()
    finally:
        rig.close()


def test_without_a_sandbox_no_project_server_runs_even_trusted(tmp_path: Path) -> None:
    need("typescript-language-server")
    ws = tmp_path / "ws"
    ws.mkdir()
    plant(ws, tmp_path / "outside-mark", real=False)
    state = trusted(ws)
    rig = make_lsp_rig(tmp_path, "none", pins=trusted_pins(state))
    try:
        assert rig.manager.project_pins == {}
        assert rig.manager.choose("typescript").servers[0].source == "user"
    finally:
        rig.close()


def _session(tmp_path: Path, env: dict[str, str], server: object, backend: str, trusted: bool) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    plant(ws, Path(env["HOME"]) / "outside-mark")
    (ws / "app.ts").write_text("export default 1;\n")
    # What runs, not how fast: a cold tsserver on a loaded machine can take longer than the default 10 s.
    (Path(env["HOME"]) / ".kimi" / "config.toml").write_text("[lsp]\nenabled = true\nstart_timeout = 60\n")
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "app.ts"})]},  # type: ignore[attr-defined]
               {"tool_calls": [tool_call("Diagnostics", {"path": "app.ts"})]},
               {"tool_calls": [tool_call("WriteFile", {"path": "app.ts", "content": TS_BAD})]},
               {"text": "done"})  # fmt: skip
    args = ["-p", "edit app.ts", "--output-format", "json", "--sandbox", backend] + (["--trust"] if trusted else [])
    proc = run_kimi(args, ws, env, server, timeout=180)  # type: ignore[arg-type]
    assert proc.returncode == 0, proc.stderr
    return tool_results(server, 3)[-1]  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", lsp_backends())
def test_kimi_p_in_an_untrusted_folder_leaves_the_planted_server_alone(
    tmp_path: Path, env: dict[str, str], server: object, backend: str
) -> None:
    need("typescript-language-server")
    env = {**env, "PATH": f"{NODE_BIN}:{env['PATH']}"}
    result = _session(tmp_path, env, server, backend, trusted=False)
    assert "[TS2322]" in result, result  # the user's own server, from PATH
    assert not (tmp_path / "ws" / "planted-ran").exists()


@pytest.mark.parametrize("backend", lsp_backends())
def test_kimi_p_with_trust_runs_the_project_server_in_the_sandbox(
    tmp_path: Path, env: dict[str, str], server: object, backend: str
) -> None:
    with_node_servers()
    need("typescript-language-server")
    env = {**env, "PATH": "/usr/bin:/bin:" + str(Path(sys.executable).parent)}
    result = _session(tmp_path, env, server, backend, trusted=True)
    assert "[TS2322]" in result, result
    assert (tmp_path / "ws" / "planted-ran").exists()
    assert not (Path(env["HOME"]) / "outside-mark").exists()
    assert json.dumps(result)  # (the result is plain text)
