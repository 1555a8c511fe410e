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
