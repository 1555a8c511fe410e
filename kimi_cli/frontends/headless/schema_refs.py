"""Which `$ref`s of a JSON Schema would make checking a value go on forever, found before any value is checked.

A validator follows `$ref` (and `allOf`, `anyOf`, `not`, `if`...) on the same value, and only moves into the
value through keywords such as `properties` or `items`. A chain of the first kind that comes back to where
it started never ends: `{"$ref": "#"}`, or `#/$defs/a -> #/$defs/b -> #/$defs/a`. jsonschema then recurses
until RecursionError. A recursive schema that reads into the value on the way (a tree: `items: {"$ref":
"#"}`) is fine: the value's depth, bounded when it is decoded (kimi_cli.util.jsonsafe), bounds it.

Only what checking can reach is walked (from the root through applicators and references; an unused
`$defs` entry is not). References are resolved as jsonschema resolves them (the `referencing` library,
with the bundled metaschemas); one that does not resolve is reported too: jsonschema would raise on it
mid-check, and kimi fetches no schema from the network.
"""

from __future__ import annotations

from typing import Any

# keywords whose schemas apply to the same value (no progress into it)
SAME_VALUE_ONE = ("not", "if", "then", "else")
SAME_VALUE_LIST = ("allOf", "anyOf", "oneOf")
SAME_VALUE_MAP = ("dependentSchemas", "dependencies")
REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# keywords whose schemas apply to parts of the value
INTO_ONE = ("additionalProperties", "items", "additionalItems", "contains", "propertyNames", "unevaluatedItems",
            "unevaluatedProperties")  # fmt: skip
INTO_LIST = ("prefixItems", "items")
INTO_MAP = ("properties", "patternProperties")
MAX_SUBSCHEMAS = 100_000


def endless_ref(schema: Any) -> str | None:
    """Why checking a value against `schema` could never end (a loop of references, named by where it
    goes) or could not run (a reference that does not resolve); None when neither."""
    if not isinstance(schema, dict):
        return None
    import referencing.jsonschema
    from jsonschema_specifications import REGISTRY

    spec = referencing.jsonschema.specification_with(str(schema.get("$schema", "")),
                                                     default=referencing.jsonschema.DRAFT202012)  # fmt: skip
    resolver = REGISTRY.resolver_with_root(spec.create_resource(schema))
    same: dict[int, list[tuple[int, str]]] = {}  # subschema -> the subschemas applied to the same value
    where: dict[int, str] = {}
    stack: list[tuple[Any, Any, str]] = [(schema, resolver, "#")]
    while stack:
        node, res, at = stack.pop()
        if not isinstance(node, dict) or id(node) in where:
            continue
        if len(where) >= MAX_SUBSCHEMAS:
            return f"more than {MAX_SUBSCHEMAS:,} subschemas"
        if "$id" in node and node is not schema:
            res = res.in_subresource(spec.create_resource(node))
        where[id(node)] = at
        here: list[tuple[Any, Any, str]] = []
        for key in REFS:
            if isinstance(node.get(key), str):
                try:
                    resolved = res.lookup(node[key])
                except Exception:  # referencing's Unresolvable and its kinds: a pointer to nothing, a remote URL
                    remote = " (kimi fetches no schema from the network)" if "://" in node[key] else ""
                    return f"{at}: {key} {node[key]!r} does not resolve{remote}"
                here.append((resolved.contents, resolved.resolver, node[key]))
        here += [(node[k], res, f"{at}/{k}") for k in SAME_VALUE_ONE if k in node]
        here += [(v, res, f"{at}/{k}/{i}") for k in SAME_VALUE_LIST for i, v in enumerate(_list(node.get(k)))]
        here += [(v, res, f"{at}/{k}/{n}") for k in SAME_VALUE_MAP for n, v in _map(node.get(k))]
        same[id(node)] = [(id(child), label) for child, _r, label in here if isinstance(child, dict)]
        stack += here
        stack += [(node[k], res, f"{at}/{k}") for k in INTO_ONE if isinstance(node.get(k), dict)]
        stack += [(v, res, f"{at}/{k}/{i}") for k in INTO_LIST for i, v in enumerate(_list(node.get(k)))]
        stack += [(v, res, f"{at}/{k}/{n}") for k in INTO_MAP for n, v in _map(node.get(k))]
    loop = _loop(same, where)
    return None if loop is None else "a $ref loop never reads into the value: " + " -> ".join(loop)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, dict) else []


def _loop(same: dict[int, list[tuple[int, str]]], where: dict[int, str]) -> list[str] | None:
    """A cycle in the same-value graph, as the places it passes through; iterative (no recursion here)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in same:
        if state.get(start):
            continue
        path: list[int] = [start]
        state[start] = 1
        edges = [iter(same.get(start, []))]
        while edges:
            step = next(edges[-1], None)
            if step is None:
                state[path.pop()] = 2
                edges.pop()
                continue
            child, _label = step
            if state.get(child) == 1:
                cycle = [*path[path.index(child) :], child]
                return [where.get(node, "?") for node in cycle]
            if not state.get(child):
                state[child] = 1
                path.append(child)
                edges.append(iter(same.get(child, [])))
    return None
