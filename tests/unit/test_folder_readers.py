"""Folder trust reads a folder's files with the extensions' own readers, handed down from above hostsafe
(kimi_cli.extensions.folder_readers, installed by hand_down_to_trust). A reader missing from that list would let
the folder's hooks, commands or servers skip the trust question: every extension that reads a folder's files
(a module of it takes the snapshot, kimi_cli.hostsafe.project_settings, or says `widenings` for trust) must be
in the list, and nothing reads a folder without the list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kimi_cli.extensions import folder_readers
from kimi_cli.hostsafe import project_settings, trust_rules

from support import ROOT_DIR

EXTENSIONS = ROOT_DIR / "kimi_cli" / "extensions"


def reads_folder_files(package: Path) -> list[str]:
    """The modules of an extension package that take the folder's snapshot or say what of it widens."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        takes = any(isinstance(n, ast.ImportFrom) and n.module == "kimi_cli.hostsafe.project_settings"
                    for n in ast.walk(tree))  # fmt: skip
        says = any(isinstance(n, ast.FunctionDef) and n.name == "widenings" for n in tree.body)
        if takes or says:
            found.append(path.relative_to(ROOT_DIR).as_posix())
    return found


def test_every_extension_that_reads_a_folder_has_its_reader_in_the_list() -> None:
    listed = {reader.package for reader in folder_readers()}
    readers_of = {f"kimi_cli.extensions.{p.name}": reads_folder_files(p) for p in EXTENSIONS.iterdir()
                  if (p / "__init__.py").is_file()}  # fmt: skip
    missing = {name: modules for name, modules in readers_of.items() if modules and name not in listed}
    assert missing == {}
    assert listed <= set(readers_of)  # each names a real extension
    assert {"kimi_cli.extensions.hooks", "kimi_cli.extensions.custom_commands", "kimi_cli.extensions.mcp",
            "kimi_cli.extensions.lsp"} <= listed  # fmt: skip


def test_the_installed_readers_are_the_assembled_list() -> None:
    """What tests/conftest.py installed, as kimi_cli.entry does at start: the one list, whole."""
    assert project_settings.installed_readers() == folder_readers()


def test_nothing_reads_a_folder_without_the_readers_or_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project_settings, "_READERS", None)
    monkeypatch.setattr(trust_rules, "_DEFAULTS", None)
    with pytest.raises(RuntimeError, match="folder readers are not installed"):
        project_settings.read_project(tmp_path)
    with pytest.raises(RuntimeError, match="defaults are not installed"):
        trust_rules.widens("shell.output_cap", 10**9)
    with pytest.raises(RuntimeError, match="defaults are not installed"):
        trust_rules.magnitude("max_steps", None)


def test_an_empty_list_of_readers_is_refused() -> None:
    """An empty list would read no folder file, and ask nothing of its hooks or servers."""
    with pytest.raises(ValueError, match="empty list"):
        project_settings.use_readers(())
    assert project_settings.installed_readers() == folder_readers()  # what was installed stays


def test_the_defaults_are_the_config_models() -> None:
    from kimi_cli.config import HEADLESS_MAX_STEPS, Config

    assert trust_rules.default_of("shell.output_cap") == Config().shell.output_cap
    assert trust_rules.default_of("approval.policy") == Config().approval.policy
    assert trust_rules.unset_means("max_steps") == float(HEADLESS_MAX_STEPS)
