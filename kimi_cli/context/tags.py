"""Definitions found by tree-sitter: the names a file defines and a skeleton of its outline."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kimi_cli.context.languages import cheap_pattern, grammar, language_for

MAX_SIGNATURE = 200
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_NAME_FIELDS = ("name", "declarator", "type")


@dataclass(frozen=True)
class Definition:
    name: str
    line: int
    depth: int
    signature: str


def extract_definitions(path: str, text: str) -> list[Definition] | None:
    """Definitions in source order, or None when the language has no grammar here."""
    lang = language_for(path)
    g = grammar(lang) if lang else None
    if g is None:
        return None
    import tree_sitter as ts

    data = text.encode("utf-8", "surrogatepass")
    tree = g.parser.parse(data)
    nodes = ts.QueryCursor(g.query).captures(tree.root_node).get("def", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    out: list[Definition] = []
    open_ends: list[int] = []
    for node in nodes:
        while open_ends and open_ends[-1] <= node.start_byte:
            open_ends.pop()
        name = _name_of(node, data)
        if name:
            out.append(Definition(name, node.start_point[0] + 1, len(open_ends), _signature(node, data)))
        open_ends.append(node.end_byte)
    return out


def cheap_definitions(lang: str, text: str) -> list[str]:
    """Names the file defines, found by regular expression (languages.CHEAP_DEFS): no parse, so it can run
    on every file; close to what tree-sitter finds for Python, JS/TS, Go and Rust, rougher for C and Java."""
    pattern = cheap_pattern(lang)
    found = pattern.findall("\n" + text)  # the patterns write a line start as `\n`
    if pattern.groups == 1:
        return found
    return [next(g for g in groups if g) for groups in found]


def _name_of(node: Any, data: bytes) -> str:
    current = node
    for _ in range(6):
        child = None
        for field in _NAME_FIELDS:
            child = current.child_by_field_name(field)
            if child is not None:
                break
        if child is None:
            return ""
        if child.type in (
            "identifier",
            "type_identifier",
            "field_identifier",
            "property_identifier",
            "namespace_identifier",
            "qualified_identifier",
            "scoped_identifier",
            "operator_name",
            "destructor_name",
            "scoped_type_identifier",
            "generic_type",
            "primitive_type",
        ):
            return data[child.start_byte : child.end_byte].decode("utf-8", "replace")
        current = child
    return ""


def _signature(node: Any, data: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None and node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    end = body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
    text = data[node.start_byte : end].decode("utf-8", "replace")
    if body is None:
        text = text.split("\n", 1)[0]
    text = " ".join(text.split()).rstrip("{ ").rstrip()
    return text if len(text) <= MAX_SIGNATURE else text[: MAX_SIGNATURE - 1] + "…"


def skeleton(defs: list[Definition]) -> str:
    """An outline: one line per definition, indented by nesting, with its line number."""
    return "\n".join(f"{d.line:>6}: {'    ' * d.depth}{d.signature}" for d in defs)


def identifiers(text: str) -> set[str]:
    return set(IDENTIFIER.findall(text))


def encode_defs(defs: list[Definition] | None) -> str:
    return json.dumps(None if defs is None else [[d.name, d.line, d.depth, d.signature] for d in defs])


def decode_defs(raw: str) -> list[Definition] | None:
    data = json.loads(raw)
    return None if data is None else [Definition(n, line, depth, sig) for n, line, depth, sig in data]
