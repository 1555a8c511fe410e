"""The import-linter contracts of pyproject.toml, checked on the real import graph with the contract types of
tests/import_contracts.py (`lint-imports` runs the same among .ci/run's gates): every contract is kept, the graph
sees kimi_cli.tools under its installed name (grimp alone does not), and an upward import breaks the layers."""

from __future__ import annotations

import sys
import tomllib
from typing import Any

import grimp
import pytest
from importlinter.domain.contract import Contract

import import_contracts
from support import ROOT_DIR

SETTINGS = tomllib.loads((ROOT_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]
TYPES: dict[str, type[Contract]] = {
    name: getattr(import_contracts, path.rpartition(".")[2])
    for name, path in (entry.split(": ") for entry in SETTINGS["contract_types"])
}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """The graph lint-imports builds: tools/ and engine/ found from the repository root (not tests/tools)."""
    sys.path.insert(0, str(ROOT_DIR))
    try:
        return grimp.build_graph(*SETTINGS["root_packages"], include_external_packages=True, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT_DIR))


def contract(options: dict[str, Any]) -> Contract:
    return TYPES[options["type"]](name=options["name"], session_options=SETTINGS, contract_options=options)


def named(name: str) -> dict[str, Any]:
    return next(c for c in SETTINGS["contracts"] if c["name"].startswith(name))


@pytest.mark.parametrize("options", SETTINGS["contracts"], ids=lambda c: c["name"][:40])
def test_every_contract_is_kept(graph: grimp.ImportGraph, options: dict[str, Any]) -> None:
    check = contract(options).check(graph, verbose=False)
    assert check.kept, check.metadata


def test_the_graph_names_the_tools_as_installed(graph: grimp.ImportGraph) -> None:
    whole = import_contracts.complete(graph)
    assert "kimi_cli.tools.shell" in whole.modules and "tools.shell" not in whole.modules
    assert "kimi_cli.tools.shell" in whole.find_modules_directly_imported_by("kimi_cli.agent.toolbox")
    assert "kimi_cli.tools.base" in whole.find_modules_directly_imported_by("kimi_cli.tools.shell")
    # what is left importing the bare package imports the package itself (`from kimi_cli import __version__`)
    for importer in whole.find_modules_that_directly_import("kimi_cli"):
        lines = [d["line_contents"] for d in whole.get_import_details(importer=importer, imported="kimi_cli")]
        assert all(line.startswith("from kimi_cli import ") for line in lines), (importer, lines)


def check_with(graph: grimp.ImportGraph, importer: str, imported: str, name: str, line: int = 1) -> Any:
    """The named contract checked on the whole graph with one more import (at `line` of the importer)."""
    bad = import_contracts.rename(graph)
    bad.add_import(importer=importer, imported=imported, line_number=line, line_contents="x")
    import_contracts._whole[:] = [bad]
    try:
        return contract(named(name)).check(graph, verbose=False)
    finally:
        import_contracts._whole.clear()


def test_an_import_of_a_tool_from_below_breaks_the_layers(graph: grimp.ImportGraph) -> None:
    assert not check_with(graph, "kimi_cli.sandbox.policy", "kimi_cli.tools.base", "The layers").kept


def test_a_third_party_import_in_the_kernel_breaks_standard_library_only(graph: grimp.ImportGraph) -> None:
    check = check_with(graph, "kimi_cli.kernel.contain", "pydantic", "The kernel restrictions")
    assert check.metadata["found"] == ["kimi_cli.kernel.contain -> pydantic (l. 1)"]


def test_lazy_imports_are_told_from_eager_ones() -> None:
    """kimi_cli.telemetry.otel imports the SDK when it is imported; tools/base.py imports pydantic so too, and
    its TYPE_CHECKING block never runs."""
    eager = import_contracts.top_level_lines("kimi_cli.tools.base")
    source = (ROOT_DIR / "tools" / "base.py").read_text().splitlines()
    assert any(source[line - 1].startswith("from pydantic import") for line in eager)
    assert not any("ImageLimits" in source[line - 1] for line in eager)  # under TYPE_CHECKING


def test_a_heavy_library_imported_at_module_level_breaks_lazy(graph: grimp.ImportGraph) -> None:
    """As if tools/base.py's top-level pydantic import were one of the MCP SDK: it would load on every start."""
    source = (ROOT_DIR / "tools" / "base.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if text.startswith("from pydantic import"))
    check = check_with(graph, "kimi_cli.tools.base", "mcp", "Heavy libraries", line)
    assert check.metadata["found"] == [f"kimi_cli.tools.base -> mcp (l. {line}, when imported)"]


def test_an_import_that_closes_a_cycle_inside_a_package_breaks_acyclic(graph: grimp.ImportGraph) -> None:
    """kimi_cli.frontends.figures is imported by the session list and the terminal's status; were it to import
    the session list back, the package would hold a cycle (the session list imported the terminal once)."""
    check = check_with(graph, "kimi_cli.frontends.figures", "kimi_cli.frontends.session_list", "Inside each package")
    assert not check.kept and "kimi_cli.frontends" in check.metadata["cycle_breakers_by_package"]
