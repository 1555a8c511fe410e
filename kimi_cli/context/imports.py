"""Which file of the repository an import names: JS/TS (relative paths, `index` files, workspace packages
through their package.json `exports`/`module`/`main`, and `dist/` -> `src/`), Python (dotted modules
and relative imports) and Go (a package path under a go.mod's `module`: the package's files, sharing the
import). An edge from an importer to the file it imports is exact where a shared name is only a guess,
and in a JS monorepo (hundreds of files defining `render`, `options`, `config`) shared names say little.
Nothing here reads files: specifiers come from the scan, package.json and go.mod from their text.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable

from kimi_cli.util import jsonsafe

JS_LANGS = frozenset({"javascript", "typescript", "tsx"})
JS_IMPORT = re.compile(r"""(?:\bfrom|\bimport|\brequire[ \t]*\(|\bimport[ \t]*\()[ \t]*['"]([^'"\n]{1,200})['"]""")
PY_IMPORT = re.compile(  # searched with a newline in front: `\n` rather than `^` lets the engine skip ahead
    r"\n[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)|import[ \t]+([\w., \t]+))"
)
JS_EXTS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", ".astro", ".svelte", ".vue")
BUILT_DIRS = ("dist/", "lib/", "build/", "esm/", "cjs/", "out/")
MAX_IMPORTS = 200  # per file: a generated barrel of thousands says nothing more
GO_BLOCK = re.compile(r"\nimport[ \t]*\(([^)]*)\)")
GO_SINGLE = re.compile(r"\nimport[ \t]+(?:[\w.]+[ \t]+)?\"([^\"\n]{1,300})\"")
GO_SPEC = re.compile(r"\"([^\"\n]{1,300})\"")
GO_MODULE = re.compile(r"^[ \t]*module[ \t]+\"?([^\s\"]+)\"?", re.MULTILINE)
MANIFESTS = ("package.json", "go.mod")  # texts the scan keeps for this resolver


def import_specs(lang: str | None, text: str) -> tuple[str, ...]:
    """The raw import specifiers of one file (`./util`, `@scope/pkg/sub`, `.models`, `pkg.mod.name`)."""
    if lang in JS_LANGS:
        return tuple(dict.fromkeys(JS_IMPORT.findall(text)))[:MAX_IMPORTS]
    if lang == "python":
        found: list[str] = []
        for base, names, plain in PY_IMPORT.findall("\n" + text):
            if plain:
                found += [part.split()[0] for part in plain.split(",") if part.strip()]
            else:
                dot = "" if base.endswith(".") else "."
                found += [f"{base}{dot}{n.split()[0]}" for n in names.split(",") if n.strip()]
                found.append(base)
        return tuple(dict.fromkeys(found))[:MAX_IMPORTS]
    if lang == "go":
        head = "\n" + text[: text.find("\nfunc ")] if "\nfunc " in text else "\n" + text  # imports come first
        specs = [m for block in GO_BLOCK.findall(head) for m in GO_SPEC.findall(block)] + GO_SINGLE.findall(head)
        return tuple(dict.fromkeys(specs))[:MAX_IMPORTS]
    return ()


class Resolver:
    """Maps import specifiers to repository paths. Built once per pack from the list of paths and the text
    of each package.json (small files, read during the scan)."""

    def __init__(self, paths: Iterable[str], manifests: dict[str, str]) -> None:
        self.paths = set(paths)
        self.packages: dict[str, tuple[str, dict[str, object]]] = {}  # name -> (folder, manifest)
        self.go_modules: list[tuple[str, str]] = []  # (module path, its folder), longest module first
        for path, text in sorted(manifests.items()):
            if path.rsplit("/", 1)[-1] == "go.mod":
                if found := GO_MODULE.search(text):
                    self.go_modules.append((found.group(1), posixpath.dirname(path)))
                continue
            try:
                manifest = jsonsafe.loads(text)
            except ValueError:
                continue
            if isinstance(manifest, dict) and isinstance(manifest.get("name"), str):
                self.packages.setdefault(manifest["name"], (posixpath.dirname(path), manifest))
        self.go_modules.sort(key=lambda item: -len(item[0]))
        self._go_module_dirs = {module: folder for module, folder in reversed(self.go_modules)}
        self._go_memo: dict[str, list[str]] = {}
        self._modules: dict[str, list[str]] | None = None
        self._go_dirs: dict[str, list[str]] | None = None
        self._memo: dict[tuple[str, str | None, str], str | None] = {}

    def resolve_all(self, importer: str, lang: str | None, specs: tuple[str, ...]) -> list[tuple[str, float]]:
        """The repository files `importer` imports, each with its share of the import: 1 for a file, split
        among a Go package's files."""
        if lang == "go":
            return [(f, 1.0 / len(files)) for spec in specs if (files := self.go_package(spec)) for f in files]
        folder = posixpath.dirname(importer)
        found = (self.resolve(importer, lang, spec, folder) for spec in specs)
        return [(target, 1.0) for target in found if target is not None]

    # --- Go -------------------------------------------------------------------------------------------

    def go_package(self, spec: str) -> list[str]:
        """The non-test .go files of the package `spec` names, when a go.mod of the repository owns it (the
        longest module path that prefixes it: one dictionary lookup per path segment, memoised)."""
        if spec in self._go_memo:
            return self._go_memo[spec]
        found: list[str] = []
        parts = spec.split("/")[:64]
        for n in range(len(parts), 0, -1):
            folder = self._go_module_dirs.get("/".join(parts[:n]))
            if folder is not None:
                rest = "/".join(parts[n:])
                target = posixpath.normpath(posixpath.join(folder, rest)) if rest else (folder or ".")
                found = self._go_index().get("" if target == "." else target, [])
                break
        self._go_memo[spec] = found
        return found

    def go_package_files(self, folder: str) -> list[str]:
        """The non-test .go files directly in `folder` (one Go package)."""
        return self._go_index().get(folder, [])

    def _go_index(self) -> dict[str, list[str]]:
        if self._go_dirs is None:
            index: dict[str, list[str]] = defaultdict(list)
            for path in sorted(self.paths):
                if path.endswith(".go") and not path.endswith("_test.go"):
                    index[posixpath.dirname(path)].append(path)
            self._go_dirs = dict(index)
        return self._go_dirs

    def resolve(self, importer: str, lang: str | None, spec: str, folder: str | None = None) -> str | None:
        """The file `spec` names when `importer` imports it, or None (not in the repository)."""
        if lang == "python" and not spec.startswith(".") and spec not in self._module_index():
            return None  # the standard library, a dependency, or a name imported from a module
        if folder is None:
            folder = posixpath.dirname(importer)
        memo = (folder, lang, spec)  # the answer depends on the importer's folder only
        if memo not in self._memo:
            found = None
            if lang in JS_LANGS:
                found = self._js(importer, spec)
            elif lang == "python":
                found = self._python(importer, spec)
            self._memo[memo] = found
        return self._memo[memo]

    # --- JS / TS --------------------------------------------------------------------------------------

    def _js(self, importer: str, spec: str) -> str | None:
        if spec.startswith("."):
            return self._file_or_index(posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec)))
        name, sub = _split_package(spec)
        if name not in self.packages:
            return None
        folder, manifest = self.packages[name]
        for target in _export_targets(manifest, sub):
            found = self._built_to_source(posixpath.normpath(posixpath.join(folder, target)))
            if found:
                return found
        base = posixpath.join(folder, sub[2:]) if sub != "." else folder
        return self._file_or_index(posixpath.join(base, "src") if sub == "." else base) or (
            self._file_or_index(posixpath.join(folder, "src", sub[2:])) if sub != "." else None
        )

    def _file_or_index(self, base: str) -> str | None:
        if base in self.paths:
            return base
        stem = re.sub(r"\.(m|c)?jsx?$", "", base)  # TS's ESM style: `./util.js` is `./util.ts` in source
        for candidate in (stem, base):
            for ext in JS_EXTS:
                if candidate + ext in self.paths:
                    return candidate + ext
        for ext in JS_EXTS:
            if f"{base}/index{ext}" in self.paths:
                return f"{base}/index{ext}"
        return None

    def _built_to_source(self, target: str) -> str | None:
        """A package.json points at its build output (`dist/x.js`); the source is usually `src/x.ts`."""
        found = self._file_or_index(target)
        if found and not any(f"/{d}" in f"/{found}" for d in BUILT_DIRS):
            return found
        folder_parts = target.split("/")
        for n, part in enumerate(folder_parts):
            if f"{part}/" in BUILT_DIRS:
                rest = "/".join(folder_parts[n + 1 :])
                rest = re.sub(r"\.d\.(m|c)?ts$", "", rest)
                head = "/".join(folder_parts[:n])
                return self._file_or_index(posixpath.join(head, "src", rest)) or self._file_or_index(
                    posixpath.join(head, rest)
                )
        return found

    # --- Python ---------------------------------------------------------------------------------------

    def _python(self, importer: str, spec: str) -> str | None:
        if spec.startswith("."):
            dots = len(spec) - len(spec.lstrip("."))
            folder = posixpath.dirname(importer)
            for _ in range(dots - 1):
                folder = posixpath.dirname(folder)
            rest = spec[dots:].replace(".", "/")
            base = posixpath.join(folder, rest) if rest else folder
            for candidate in (base + ".py", base + "/__init__.py"):
                if candidate in self.paths:
                    return candidate
            return None
        modules = self._module_index()
        owners = modules.get(spec)
        if not owners:
            return None
        # Two files can claim a module (src/pkg and a vendored copy): the one nearest the importer wins.
        return min(owners, key=lambda p: (-_common_prefix(p, importer), p.count("/"), p))

    def _module_index(self) -> dict[str, list[str]]:
        """Dotted module names -> files, for every package root (a folder without __init__.py above)."""
        if self._modules is None:
            index: dict[str, list[str]] = defaultdict(list)
            for path in self.paths:
                if not path.endswith(".py"):
                    continue
                parts = path[:-3].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                # every suffix that starts at a package root can be imported
                for start in range(len(parts)):
                    prefix = "/".join(parts[:start])
                    if (start == 0 or f"{prefix}/__init__.py" not in self.paths) and parts[start:]:
                        index[".".join(parts[start:])].append(path)
            self._modules = dict(index)
        return self._modules


def _split_package(spec: str) -> tuple[str, str]:
    """`@scope/pkg/a/b` -> (`@scope/pkg`, `./a/b`); `pkg` -> (`pkg`, `.`)."""
    parts = spec.split("/")
    count = 2 if spec.startswith("@") else 1
    name = "/".join(parts[:count])
    rest = "/".join(parts[count:])
    return name, f"./{rest}" if rest else "."


def _export_targets(manifest: dict[str, object], sub: str) -> list[str]:
    """Where package.json sends `sub` (`.` or `./x`): `exports` (conditions, `*` patterns), then for the
    package itself `module`, `main`, `types`."""
    out: list[str] = []
    exports = manifest.get("exports")
    if isinstance(exports, str | list) or (isinstance(exports, dict) and not any(k.startswith(".") for k in exports)):
        exports = {".": exports}
    if isinstance(exports, dict):
        entry = exports.get(sub)
        if entry is None:
            for key, value in exports.items():
                if "*" in key:
                    head, _, tail = key.partition("*")
                    if sub.startswith(head) and sub.endswith(tail) and len(sub) >= len(head) + len(tail):
                        star = sub[len(head) : len(sub) - len(tail)]
                        out += [t.replace("*", star) for t in _condition_targets(value)]
        else:
            out += _condition_targets(entry)
    if sub == ".":
        out += [v for k in ("source", "module", "main", "types", "typings") if isinstance(v := manifest.get(k), str)]
    return out


def _condition_targets(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in _condition_targets(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _condition_targets(item)]
    return []


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n
