"""The lowest layers import only downward (read from the source's AST, every import anywhere in a module):

- kernel/ imports the standard library only (the spawner runs it as `python -I -S`), and itself;
- util/ imports the standard library, third-party packages and kimi_cli.errors;
- hostsafe/ may import kernel and util; sandbox/ may import hostsafe, kernel and util.

The import-linter contracts in pyproject.toml state the whole graph (`lint-imports`, tests/unit/
test_import_contracts.py); this is the part these packages own, read from every import. KNOWN lists the
upward imports still to remove, each with where it goes: a new one fails here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from support import ROOT_DIR

PACKAGE = ROOT_DIR / "kimi_cli"
MAY_IMPORT = {
    "kernel": {"kernel"},
    "util": {"util", "errors"},
    "hostsafe": {"hostsafe", "kernel", "util", "errors"},
    "sandbox": {"sandbox", "hostsafe", "kernel", "util", "errors"},
}
# (module, what it imports): upward imports not yet removed.
KNOWN: set[tuple[str, str]] = set()  # none left


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every absolute import in the module; relative ones stay in their package."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))
    return found


def modules(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


def test_kernel_imports_the_standard_library_only() -> None:
    outside = [
        f"{path.relative_to(ROOT_DIR)}:{line}: {name}"
        for path in modules("kernel")
        for line, name in imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("kimi_cli.kernel")
    ]
    assert outside == []


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_the_low_packages_import_only_downward(package: str) -> None:
    upward = []
    for path in modules(package):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, name in imports(path):
            parts = name.split(".")
            if parts[0] != "kimi_cli" or len(parts) < 2:
                continue
            if parts[1] not in MAY_IMPORT[package] and (rel, parts[1]) not in KNOWN:
                upward.append(f"kimi_cli/{rel}:{line}: {name}")
    assert upward == []


def test_the_known_upward_imports_are_still_there() -> None:
    """Remove a line of KNOWN once its import is gone, so the list never hides a new one."""
    present = {
        (path.relative_to(PACKAGE).as_posix(), name.split(".")[1])
        for package in MAY_IMPORT
        for path in modules(package)
        for _, name in imports(path)
        if name.startswith("kimi_cli.")
    }
    assert KNOWN - present == set()


def test_no_module_of_these_packages_re_exports_a_name() -> None:
    """One name, one import path: what a module's __all__ lists is defined there, never imported (host.py used
    to re-export repo_guard's names, policy.py env's SANE_PATH)."""
    imported = []
    for package in MAY_IMPORT:
        for path in modules(package):
            tree = ast.parse(path.read_text(), str(path))
            listed: list[str] = []
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                    listed = [elt.value for elt in getattr(node.value, "elts", []) if isinstance(elt, ast.Constant)]
            names = {
                alias.asname or alias.name.split(".")[0]
                for node in tree.body
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names
            }
            imported += [f"{path.relative_to(ROOT_DIR)}: {name}" for name in listed if name in names]
    assert imported == []


SPAWNS = {"run", "Popen", "check_output", "check_call", "call", "create_subprocess_exec"}


def test_git_runs_on_the_host_only_through_host_git() -> None:
    """Every git kimi starts on the host goes through kimi_cli/hostsafe/git/host.py (spawn, or SafeGit): no
    other module starts a program whose argv begins with "git"."""
    found = []
    for top in (PACKAGE, ROOT_DIR / "tools"):
        for path in sorted(top.rglob("*.py")):
            if "hostsafe/git" in path.as_posix():
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") in SPAWNS and node.args):
                    continue
                first = node.args[0]
                head = first.elts[0] if isinstance(first, ast.List | ast.Tuple) and first.elts else first
                if isinstance(head, ast.Constant) and str(head.value).split()[:1] == ["git"]:
                    found.append(f"{path.relative_to(ROOT_DIR)}:{node.lineno}")
    assert found == []
