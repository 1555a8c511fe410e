"""Real language servers (basedpyright, typescript-language-server, ruff) in a real sandbox, driven the way the
agent's call path drives kimi_cli.extensions.lsp: a read starts them, an edit reports what it introduced or fixed,
Definition and References answer across modules, and nothing starts before a file of the language is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import fake_server, lsp_backends, make_lsp_rig, need

pytestmark = pytest.mark.timeout(300)

UTIL = "def helper(x: int) -> int:\n    return x + 1\n"
APP = "from util import helper\n\n\ndef main() -> int:\n    return helper(3)\n"
APP_BAD = APP.replace("helper(3)", "helper('3')")
TS_UTIL = "export function helper(x: number): number {\n  return x + 1;\n}\n"
TS_APP = 'import { helper } from "./util";\n\nexport function main(): number {\n  return helper(3);\n}\n'


@pytest.fixture(params=lsp_backends())
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def python_rig(tmp_path: Path, backend: str, **settings: object):  # type: ignore[no-untyped-def]
    need("basedpyright-langserver")
    rig = make_lsp_rig(tmp_path, backend, languages={"python": ["basedpyright"]}, **settings)
    (rig.ws / "util.py").write_text(UTIL)
    (rig.ws / "app.py").write_text(APP)
    return rig


def test_a_python_type_error_is_reported_then_its_fix_and_a_clean_edit_adds_nothing(
    tmp_path: Path, backend: str
) -> None:
    rig = python_rig(tmp_path, backend)
    try:
        assert rig.manager.servers == {}  # nothing started with the session
        rig.read("app.py")
        rig.wait_running("basedpyright")
        added, seconds = rig.write("app.py", APP_BAD)
        assert "[diagnostics] 1 new after this edit" in added and "first check" not in added, added
        assert "error app.py:5:19 [reportArgumentType] Argument of type \"Literal['3']\"" in added
        assert seconds < 3, seconds
        fixed, seconds = rig.write("app.py", APP)
        assert fixed.startswith("[diagnostics] 1 fixed after this edit\nfixed: error app.py:5:19"), fixed
        clean, seconds = rig.write("app.py", APP + "# a comment\n")
        assert clean == "", clean
        later = [rig.write("app.py", (APP_BAD if n % 2 else APP) + f"# edit {n}\n") for n in range(1, 7)]
        assert all(("1 new" if n % 2 else "1 fixed") in text for n, (text, _) in enumerate(later, 1)), later
        assert min(seconds for _, seconds in later) < 0.5, later  # the running server answers, no new start
        status = rig.manager.servers["basedpyright"].status()
        assert status["state"] == "running" and status["restarts"] == 0 and status["source"] == "user"
    finally:
        rig.close()


def test_an_edit_that_breaks_another_open_module_reports_that_module(tmp_path: Path, backend: str) -> None:
    rig = python_rig(tmp_path, backend)
    try:
        rig.read("app.py")
        rig.read("util.py")
        rig.wait_running("basedpyright")
        added, _ = rig.write("util.py", UTIL.replace("x: int", "x: str"))
        assert "app.py:5" in added, added
    finally:
        rig.close()


def test_definition_and_references_across_modules(tmp_path: Path, backend: str) -> None:
    from kimi_cli.extensions.lsp.queries import Queries

    rig = python_rig(tmp_path, backend)
    try:
        queries = Queries(rig.manager)
        found = rig.run(queries.locate("definition", "app.py", None, None, "helper"))
        assert "util.py:1:5: def helper(x: int) -> int:" in found, found
        found = rig.run(queries.locate("definition", "app.py", 5, 12, None))
        assert "util.py:1:5" in found, found
        refs = rig.run(queries.locate("references", "util.py", None, None, "helper"))
        assert "app.py:1:18: from util import helper" in refs and "app.py:5:12: return helper(3)" in refs, refs
        listed = rig.run(queries.diagnostics("app.py"))
        assert listed.startswith("app.py: no errors or warnings"), listed
    finally:
        rig.close()


def test_a_file_a_command_changed_is_checked_after_the_command(tmp_path: Path, backend: str) -> None:
    rig = python_rig(tmp_path, backend)
    try:
        rig.read("app.py")
        rig.wait_running("basedpyright")
        (rig.ws / "app.py").write_text(APP_BAD)  # as `sed -i` in the sandbox would
        added = rig.command_changed()
        assert "error app.py:5:19 [reportArgumentType]" in added, added
        assert rig.command_changed() == ""  # nothing changed since
    finally:
        rig.close()


def test_a_typescript_type_error_and_definition(tmp_path: Path, backend: str) -> None:
    from kimi_cli.extensions.lsp.queries import Queries

    need("typescript-language-server")
    rig = make_lsp_rig(tmp_path, backend)
    (rig.ws / "util.ts").write_text(TS_UTIL)
    (rig.ws / "app.ts").write_text(TS_APP)
    try:
        rig.read("app.ts")
        rig.wait_running("typescript-language-server")
        added, seconds = rig.write("app.ts", TS_APP.replace("helper(3)", 'helper("3")'))
        assert "error app.ts:4:17 [TS2345] Argument of type 'string' is not assignable to parameter of type " \
               "'number'." in added, added  # fmt: skip
        assert seconds < 3, seconds
        fixed, seconds = rig.write("app.ts", TS_APP)
        assert fixed.startswith("[diagnostics] 1 fixed"), fixed
        later = [rig.write("app.ts", TS_APP + f"// edit {n}\n")[1] for n in range(3)]
        assert min(later) < 0.5, later
        assert rig.write("app.ts", TS_APP + "// note\n")[0] == ""
        found = rig.run(Queries(rig.manager).locate("definition", "app.ts", 4, None, "helper"))
        assert "util.ts:1:17: export function helper(x: number): number {" in found, found
    finally:
        rig.close()


def test_ruff_lints_beside_the_type_checker(tmp_path: Path) -> None:
    need("ruff")
    rig = make_lsp_rig(tmp_path, "bwrap" if "bwrap" in lsp_backends() else "landlock", languages={"python": ["ruff"]})
    (rig.ws / "app.py").write_text("import os\n")
    try:
        rig.read("app.py")
        rig.wait_running("ruff")
        added, _ = rig.write("app.py", "import os\nimport sys\n")
        assert "app.py:2:8 [F401]" in added and "sys" in added, added
    finally:
        rig.close()


def test_a_file_of_no_known_language_starts_nothing(tmp_path: Path) -> None:
    rig = make_lsp_rig(tmp_path, lsp_backends()[0], **fake_server("ok"))
    (rig.ws / "notes.md").write_text("# notes\n")
    try:
        rig.read("notes.md")
        assert rig.write("notes.md", "# more\n")[0] == ""
        assert rig.manager.servers == {}
    finally:
        rig.close()


def test_no_server_installed_is_silent_with_one_line_in_the_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kimi_cli.extensions.lsp.wiring import doctor_lines, lsp_tools, status_lines

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no language server here
    rig = make_lsp_rig(tmp_path, lsp_backends()[0], servers={"ruff": {"enabled": False}})
    (rig.ws / "app.py").write_text(APP)
    try:
        rig.read("app.py")
        assert rig.write("app.py", APP_BAD)[0] == ""
        assert lsp_tools(rig.manager) == []  # no tools the model could not use
        python = next(line for line in status_lines(rig.manager) if line.startswith("python:"))
        assert python == ("python: basedpyright: not installed (not on PATH outside the workspace) · "
                          "pyright: not installed (not on PATH outside the workspace)"), python  # fmt: skip
        assert "lsp python: basedpyright or pyright: not installed" in doctor_lines(rig.manager.settings, rig.ws)
    finally:
        rig.close()


def test_the_docker_sandbox_runs_no_server(tmp_path: Path) -> None:
    from kimi_cli.config import LspSettings
    from kimi_cli.extensions.lsp.wiring import lsp_tools, open_lsp, status_lines

    manager = open_lsp(LspSettings(), tmp_path, object(), None, None)  # a sandbox without spawn_spec
    assert manager is not None and lsp_tools(manager) == []
    assert status_lines(manager) == ["language servers need the bwrap, landlock or none sandbox; this session's "
                                     "cannot run them"]  # fmt: skip
    assert open_lsp(LspSettings(enabled=False), tmp_path, object(), None, None) is None
