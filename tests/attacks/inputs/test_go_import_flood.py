"""Go import resolution in the pack: a repository controls how many go.mod files and how
many imports there are, so resolution must not cost (files x imports x go.mod files).

Measured here (kimi_cli/context/imports.py as of today): 500 go.mod + 500 .go files of 200 imports each
take 5.5 s to resolve, 2000 + 2000 take 83 s; `kimi pack` of 1500 + 1500 (3000 tiny files) takes 53 s.
The tests count module comparisons instead of timing them. Each attack test sits beside the legitimate use."""

from __future__ import annotations

from typing import Any

from kimi_cli.context.imports import Resolver, import_specs


class CountingModules(list[tuple[str, str]]):
    """Resolver.go_modules, counting the entries any lookup walks through."""

    walked = 0

    def __iter__(self) -> Any:
        for item in super().__iter__():
            CountingModules.walked += 1
            yield item


def _resolver(modules: int) -> tuple[Resolver, list[str]]:
    manifests = {f"m{i}/go.mod": f"module example.com/m{i}\n" for i in range(modules)}
    go_files = [f"m{i}/a.go" for i in range(modules)]
    resolver = Resolver(go_files + list(manifests), manifests)
    resolver.go_modules = CountingModules(resolver.go_modules)
    return resolver, go_files


def test_resolving_go_imports_does_not_walk_every_go_mod_for_every_import() -> None:
    """kimi_cli/context/imports.py `Resolver.go_package` tries each go.mod's module in turn for each import
    of each file, unmemoised: 300 modules x 300 files x 200 imports = 18 M comparisons here (quadratic in the
    repository's size; a hostile clone of a few thousand tiny files stalls `kimi pack` and every session
    start for minutes)."""
    resolver, go_files = _resolver(300)
    text = "package a\nimport (\n" + "".join(f'\t"example.com/zz{j}/x"\n' for j in range(200)) + ")\nfunc f() {}\n"
    specs = import_specs("go", text)
    assert len(specs) == 200
    CountingModules.walked = 0
    for path in go_files:
        assert resolver.resolve_all(path, "go", specs) == []
    lookups = len(go_files) * len(specs)
    assert CountingModules.walked <= 20 * lookups, f"{CountingModules.walked} module comparisons for {lookups} imports"


def test_go_imports_still_resolve_to_the_longest_module_and_its_package_files() -> None:
    manifests = {"go.mod": "module example.com/app\n", "tools/go.mod": "module example.com/app/tools\n"}
    paths = ["main.go", "util/a.go", "util/b.go", "util/a_test.go", "tools/gen/g.go", *manifests]
    resolver = Resolver(paths, manifests)
    assert resolver.go_package("example.com/app/util") == ["util/a.go", "util/b.go"]
    assert resolver.go_package("example.com/app/tools/gen") == ["tools/gen/g.go"]
    assert resolver.go_package("fmt") == []


def test_an_import_with_dot_dot_stays_among_the_repositorys_own_paths() -> None:
    """Held: `..` in an import path is normalised against the go.mod's folder and looked up among the scanned
    paths only; nothing outside the workspace is named or read."""
    manifests = {"svc/go.mod": "module example.com/svc\n"}
    resolver = Resolver(["svc/main.go", "other/x.go", *manifests], manifests)
    assert resolver.go_package("example.com/svc/../other") == ["other/x.go"]
    assert resolver.go_package("example.com/svc/../../../etc") == []
