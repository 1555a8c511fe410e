"""The import-linter contract types of pyproject.toml's [tool.importlinter]: the stock ones, on a graph that sees
the whole of kimi_cli, plus two it has not: "the standard library only" and "imported only inside functions".

`lint-imports` builds its graph with grimp, which finds a package's modules by walking the package's folder.
kimi_cli.tools and kimi_cli.engine live in the top-level folders tools/ and engine/ (pyproject.toml's package-dir),
so grimp finds no module of theirs under kimi_cli/: every `from kimi_cli.tools.x import y` becomes an import of
the bare package `kimi_cli`, and a contract could not see a low layer importing a tool. The configuration
therefore names tools and engine as root packages of their own (importable from the repository root, which
lint-imports puts on sys.path); each contract here first renames them to the names they are installed under and
points every import of `kimi_cli` that meant one of their modules at that module (read from the importing
file's own import statements), then checks as the stock contract does.
"""

from __future__ import annotations

import ast
import sys
from copy import deepcopy
from pathlib import Path

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

ROOT = Path(__file__).resolve().parents[1]
# folder (a root package of the configuration) -> the name it is installed under
MAPPED = {"tools": "kimi_cli.tools", "engine": "kimi_cli.engine"}


def installed_name(module: str) -> str:
    head, _, rest = module.partition(".")
    if head in MAPPED:
        return MAPPED[head] + (f".{rest}" if rest else "")
    return module


def folder_name(module: str) -> str:
    """kimi_cli.tools.shell -> tools.shell (the name the configuration's graph has); others unchanged."""
    for folder, name in MAPPED.items():
        if module == name or module.startswith(name + "."):
            return folder + module[len(name) :]
    return module


def source_file(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def resolve(name: str, graph: ImportGraph) -> str | None:
    """The module of tools/ or engine/ an import of `name` (an installed name) reaches, or None."""
    module = folder_name(name)
    if module == name:
        return None
    while module not in graph.modules and "." in module:
        module = module.rpartition(".")[0]
    return module if module in graph.modules else None


def mapped_targets(importer: str, graph: ImportGraph) -> set[tuple[str, int, str]]:
    """(module, line, text) of each import, in the importer's file, of a module of tools/ or engine/ by its
    installed name, as the configuration's graph names that module. `from kimi_cli.tools import shell` reaches
    tools.shell; `from kimi_cli.tools.base import Tool` reaches tools.base."""
    path = source_file(importer)
    lines = path.read_text().splitlines()
    found: set[tuple[str, int, str]] = set()
    for node in ast.walk(ast.parse("\n".join(lines), str(path))):
        if isinstance(node, ast.Import):
            reached = [resolve(alias.name, graph) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            reached = [resolve(f"{node.module}.{alias.name}", graph) for alias in node.names]
        else:
            continue
        found |= {(module, node.lineno, lines[node.lineno - 1].strip()) for module in reached if module}
    return found


_whole: list[ImportGraph] = []


def complete(graph: ImportGraph) -> ImportGraph:
    """The configuration's graph under the installed names, every import of tools/ and engine/ pointing at its
    module. Built once (lint-imports builds one graph for one configuration); each contract gets its own copy,
    as lint-imports gives each its own copy of the graph it built."""
    if not _whole:
        _whole.append(rename(graph))
    return deepcopy(_whole[0])


def rename(graph: ImportGraph) -> ImportGraph:
    whole = ImportGraph()
    for module in graph.modules:
        whole.add_module(installed_name(module), is_squashed=graph.is_module_squashed(module))
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            details = graph.get_import_details(importer=importer, imported=imported)
            if imported == "kimi_cli":
                targets = mapped_targets(importer, graph)
                # the package itself (`from kimi_cli import __version__`) stays an import of kimi_cli
                details = [d for d in details if not any(d["line_number"] == line for _, line, _ in targets)]
                for module, line, text in sorted(targets):
                    whole.add_import(
                        importer=installed_name(importer),
                        imported=installed_name(module),
                        line_number=line,
                        line_contents=text,
                    )
                if not details:
                    continue
            for detail in details or [{}]:
                whole.add_import(
                    importer=installed_name(importer),
                    imported=installed_name(imported),
                    line_number=detail.get("line_number"),
                    line_contents=detail.get("line_contents"),
                )
    return whole


class Layers(LayersContract):
    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        return super().check(complete(graph), verbose)


class Forbidden(ForbiddenContract):
    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        return super().check(complete(graph), verbose)


class Independence(IndependenceContract):
    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        return super().check(complete(graph), verbose)


class AcyclicSiblings(AcyclicSiblingsContract):
    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        from importlinter.adapters.timing import SystemClockTimer
        from importlinter.application.app_config import settings

        if "TIMER" not in settings._config:  # lint-imports sets its timer up; a check in the unit layer does not
            settings.configure(TIMER=SystemClockTimer())
        return super().check(complete(graph), verbose)


def within(module: str, packages: list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class StandardLibraryOnly(Contract):
    """The source packages import the standard library and themselves, nothing else (kimi_cli.kernel: the
    spawner runs it as `python -I -S`, where no other package can be found)."""

    source_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        graph = complete(graph)
        found = []
        for importer in sorted(graph.modules):
            if not within(importer, self.source_modules):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if within(imported, self.source_modules) or imported.split(".")[0] in sys.stdlib_module_names:
                    continue
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                found.append(f"{importer} -> {imported} (l. {', '.join(map(str, lines))})")
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["found"]:
            output.print_error(f"-   {line}", bold=False)


def top_level_lines(module: str) -> set[int]:
    """The lines of the module's imports that run when it is imported: outside every function, and not
    under `if TYPE_CHECKING:` (those never run)."""
    tree = ast.parse(source_file(folder_name(module)).read_text())
    lines: set[int] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                lines.add(node.lineno)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.If | ast.Try | ast.With | ast.ClassDef):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(tree.body)
    return lines


class Lazy(Contract):
    """Each listed library is imported when a module is imported only by the `holders` (the modules that
    wrap it), and each holder is itself imported only inside functions: a start that does not need the
    library does not load it. Other modules import the library inside the function that uses it."""

    libraries = fields.ListField(subfield=fields.StringField())
    holders = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        graph = complete(graph)
        holders = list(self.holders or [])
        found = []
        for imported in [*self.libraries, *holders]:
            if imported not in graph.modules:
                continue
            for importer in sorted(graph.find_modules_that_directly_import(imported)):
                if not importer.startswith("kimi_cli") or (imported in self.libraries and importer in holders):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                eager = sorted({d["line_number"] for d in details} & top_level_lines(importer))
                if eager:
                    found.append(f"{importer} -> {imported} (l. {', '.join(map(str, eager))}, when imported)")
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["found"]:
            output.print_error(f"-   {line}", bold=False)
