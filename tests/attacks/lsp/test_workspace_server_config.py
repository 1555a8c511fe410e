"""A language server reads the workspace's own configuration: a hostile pyrightconfig.json or tsconfig.json can
point it at files outside the workspace, and its diagnostics quote what it finds there (pyright's reveal_type
prints a constant's value; tsserver names the literal type it cannot assign).

The attack: the configuration names the user's ~/.aws, where a module holds a token, and a workspace file
prints it through a diagnostic. Run on the host (`--sandbox none`, the control), the token comes back in the
edit's result; run as kimi runs every server, in the session's sandbox, the hidden folder is not there and
nothing of it comes back. Beside it, the legitimate use: a pyrightconfig.json whose extraPaths name a folder
of the workspace still works.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_support import SECRET, lsp_backends, make_lsp_rig, need

pytestmark = pytest.mark.timeout(300)

PY_LEAK = "from secret_mod import TOKEN\n\nreveal_type(TOKEN)\nx: int = TOKEN\n"
TS_LEAK = 'import { TOKEN } from "@secret/secret";\n\nconst n: "x" = TOKEN;\nexport default n;\n'


def _python(tmp_path: Path, backend: str) -> str:
    need("basedpyright-langserver")
    rig = make_lsp_rig(tmp_path, backend, languages={"python": ["basedpyright"]})
    (rig.ws / "pyrightconfig.json").write_text(json.dumps({"extraPaths": [str(rig.home / ".aws")]}))
    (rig.ws / "app.py").write_text("x = 1\n")
    try:
        rig.read("app.py")
        rig.wait_running("basedpyright")
        added, _ = rig.write("app.py", PY_LEAK)
        return added
    finally:
        rig.close()


def _typescript(tmp_path: Path, backend: str) -> str:
    need("typescript-language-server")
    rig = make_lsp_rig(tmp_path, backend)
    paths = {"@secret/*": [str(rig.home / ".aws" / "*")]}
    config = {"compilerOptions": {"strict": True, "paths": paths}, "include": ["*.ts", str(rig.home / ".aws" / "*.ts")]}
    (rig.ws / "tsconfig.json").write_text(json.dumps(config))
    (rig.ws / "app.ts").write_text("export default 1;\n")
    try:
        rig.read("app.ts")
        rig.wait_running("typescript-language-server")
        added, _ = rig.write("app.ts", TS_LEAK)
        return added
    finally:
        rig.close()


def test_control_on_the_host_a_pyrightconfig_reads_the_hidden_folder(tmp_path: Path) -> None:
    added = _python(tmp_path, "none")
    assert SECRET in added, added  # the attack is real: this is what a server outside the sandbox gives back


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_pyrightconfig_pointing_outside_reads_nothing_there(tmp_path: Path, backend: str) -> None:
    added = _python(tmp_path, backend)
    assert SECRET not in added and "secret_mod" in added, added  # the import is simply not found


def test_control_on_the_host_a_tsconfig_reads_the_hidden_folder(tmp_path: Path) -> None:
    added = _typescript(tmp_path, "none")
    assert SECRET in added, added


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_tsconfig_pointing_outside_reads_nothing_there(tmp_path: Path, backend: str) -> None:
    added = _typescript(tmp_path, backend)
    # bwrap: the folder is empty (TS2307, not found); landlock: the file cannot be read (TS2306, not a module)
    assert SECRET not in added and ("[TS2307]" in added or "[TS2306]" in added), added


@pytest.mark.parametrize("backend", lsp_backends())
def test_a_pyrightconfig_naming_a_workspace_folder_still_works(tmp_path: Path, backend: str) -> None:
    need("basedpyright-langserver")
    rig = make_lsp_rig(tmp_path, backend, languages={"python": ["basedpyright"]})
    (rig.ws / "vendor").mkdir()
    (rig.ws / "vendor" / "shared.py").write_text('NAME = "kimi"\n')
    (rig.ws / "pyrightconfig.json").write_text(json.dumps({"extraPaths": ["vendor"]}))
    (rig.ws / "app.py").write_text("x = 1\n")
    try:
        rig.read("app.py")
        rig.wait_running("basedpyright")
        added, _ = rig.write("app.py", "from shared import NAME\n\nx: int = NAME\n")
        assert "\"Literal['kimi']\"" in added and "is not assignable" in added, added
    finally:
        rig.close()


def test_diagnostics_for_files_outside_the_workspace_are_dropped(tmp_path: Path) -> None:
    """A server told to check other folders (include: [...]) publishes for their files too: kimi keeps
    none of them, so no outside path or text reaches the model, on the host or not."""
    from kimi_cli.extensions.lsp.protocol import uri_of

    rig = make_lsp_rig(tmp_path, lsp_backends()[0], languages={"python": []})
    try:
        from kimi_cli.extensions.lsp.client import LanguageServer
        from kimi_cli.extensions.lsp.servers import BUILTIN, Located

        server = LanguageServer(Located(BUILTIN["ruff"], ("ruff",), "user"), rig.ws, rig.sandbox, None, lambda s: None)
        rig.run(__import__("kimi_cli.extensions.lsp.protocol", fromlist=["load"]).load())
        outside = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                   "message": SECRET, "severity": 1}  # fmt: skip
        server._notified("textDocument/publishDiagnostics",
                         {"uri": uri_of(rig.home / ".aws" / "secret_mod.py"), "diagnostics": [outside]})  # fmt: skip
        server._notified("textDocument/publishDiagnostics", {"uri": uri_of(rig.ws / "a.py"), "diagnostics": [outside]})
        assert [p.diags[0].path for p in server.published.values()] == ["a.py"]
    finally:
        rig.close()
