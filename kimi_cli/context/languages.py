"""Tree-sitter languages from the offline per-language wheels, and which nodes are definitions."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

EXTENSIONS = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}  # fmt: skip

# (module, attribute) of each grammar's language() function
GRAMMARS = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

_JS_DEFS = """
(function_declaration) @def
(generator_function_declaration) @def
(class_declaration) @def
(method_definition) @def
(variable_declarator value: [(arrow_function) (function_expression)]) @def
"""
_TS_DEFS = (
    _JS_DEFS
    + """
(interface_declaration) @def
(type_alias_declaration) @def
(enum_declaration) @def
(abstract_class_declaration) @def
(abstract_method_signature) @def
(method_signature) @def
"""
)
DEF_QUERIES = {
    "python": "(function_definition) @def (class_definition) @def",
    "javascript": _JS_DEFS,
    "typescript": _TS_DEFS,
    "tsx": _TS_DEFS,
    "go": "(function_declaration) @def (method_declaration) @def (type_spec) @def",
    "rust": "(function_item) @def (struct_item) @def (enum_item) @def (trait_item) @def (impl_item) @def "
    "(mod_item) @def (function_signature_item) @def",
    "java": "(class_declaration) @def (interface_declaration) @def (enum_declaration) @def "
    "(record_declaration) @def (method_declaration) @def (constructor_declaration) @def",
    "c": "(function_definition) @def (struct_specifier body: (_)) @def (enum_specifier body: (_)) @def",
    "cpp": "(function_definition) @def (struct_specifier body: (_)) @def (enum_specifier body: (_)) @def "
    "(class_specifier body: (_)) @def (namespace_definition) @def",
}


# Definitions found by regular expression, for ranking: the names a file defines, without a parse. Cheap
# enough to run on every file of a 14k-file tree; tree-sitter runs only on the files that get outlined.
# Each pattern's first group is the name. A line start is written `\n` (the text is searched with a
# newline in front): a literal lets the regex engine skip ahead, where `^` in multiline mode tries every
# position (2x slower on SQLAlchemy).
_JS_CHEAP = (
    r"(?:\n|[ \t;(])(?:function\*?|class|interface|type|enum)[ \t]+([A-Za-z_$][\w$]*)",
    r"(?:\n|[ \t;])(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:async[ \t]*)?"
    r"(?:function\b|\([^)\n]*\)[ \t]*(?::[^=\n]*)?=>|[A-Za-z_$][\w$]*[ \t]*=>)",
)
CHEAP_DEFS: dict[str, tuple[str, ...]] = {
    "python": (r"\n[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)",),
    "javascript": _JS_CHEAP,
    "typescript": _JS_CHEAP,
    "tsx": _JS_CHEAP,
    "go": (r"\nfunc[ \t]+(?:\([^)]*\)[ \t]*)?([A-Za-z_]\w*)",
           r"\n(?:type[ \t]+|\t)([A-Za-z_]\w*)[ \t]+(?:struct|interface)\b"),
    "rust": (r"\b(?:fn|struct|enum|trait|mod|union)[ \t]+([A-Za-z_]\w*)",),
    "java": (r"\b(?:class|interface|enum|record)[ \t]+([A-Za-z_]\w*)",
             r"\n[ \t]+(?:(?:public|private|protected|static|final|abstract|synchronized)[ \t]+)+[\w<>\[\],. ?]+[ \t]+"
             r"([A-Za-z_]\w*)[ \t]*\("),
    "c": (r"\b(?:struct|enum|union)[ \t]+([A-Za-z_]\w*)[ \t]*\{",
          r"\n[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)[ \t]*\([^;{]*\)[ \t]*\{"),
    "cpp": (r"\b(?:struct|class|enum|union|namespace)[ \t]+([A-Za-z_]\w*)[ \t]*[:{]",
            r"\n[A-Za-z_][\w \t*&:<>,]*?\b([A-Za-z_]\w*)[ \t]*\([^;{]*\)[ \t]*(?:const[ \t]*)?\{"),
}  # fmt: skip


@dataclass
class Grammar:
    language: Any
    parser: Any
    query: Any


def language_for(path: str) -> str | None:
    dot = path.rfind(".")
    return EXTENSIONS.get(path[dot:].lower()) if dot >= 0 else None


@cache
def grammar(name: str) -> Grammar | None:
    """The parser and definitions query for a language, or None if its wheel is not installed."""
    try:
        import tree_sitter as ts

        module_name, attr = GRAMMARS[name]
        module = importlib.import_module(module_name)
        language = ts.Language(getattr(module, attr)())
        return Grammar(language, ts.Parser(language), ts.Query(language, DEF_QUERIES[name]))
    except (ImportError, AttributeError, KeyError, ValueError):
        return None


@cache
def cheap_pattern(name: str) -> Any:
    """One compiled alternation of the language's definition patterns."""
    import re

    return re.compile("|".join(f"(?:{p})" for p in CHEAP_DEFS[name]))
