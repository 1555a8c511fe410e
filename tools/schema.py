"""One converter for every tool schema that reaches the model: kimi's own tools (pydantic), MCP tools and
subagent kinds.

The Kimi platform wants a plain object schema: every property typed, no `strict`, no references. What
servers send is any legal JSON Schema: local `$ref`s by name (`#/$defs/X`, `#/definitions/X`) and by JSON
pointer (`#/properties/a/items`, `#`), recursive ones (a tree node), boolean subschemas (`true`, `false`)
anywhere, keywords of every draft. So the converter
- inlines local references, with cycle detection and a depth bound: a recursive node, or anything past
  the bound, becomes `{"type": "object"}` with its description (the server still validates the call);
- keeps only keywords the platform takes (an allowlist: validation keywords and descriptions) and gives
  every property a type;
- bounds its own work (nodes produced), so a schema built to explode through shared references cannot
  stall the session;
- never raises: `convert_parameters` returns the schema or the reason it could not make one, and the
  caller drops that one tool.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel

from kimi_cli.util.logs import get_logger

MAX_DEPTH = 12  # schema nesting kept; deeper nodes become a described object
MAX_NODES = 5_000  # nodes produced for one tool; past it the rest become described objects
MAX_SCHEMA_BYTES = 100_000  # a converted tool schema larger than this is refused (it would eat the prompt)
JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
SCALARS = {
    "type", "description", "enum", "const", "default", "format", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
    "uniqueItems", "minProperties", "maxProperties", "required",
}  # fmt: skip
_PY_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}
log = get_logger("schema")


class _Unconvertible(Exception):
    """This schema cannot become a tool's parameters (the tool is dropped, with this reason)."""


class _Converter:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.nodes = 0

    # --- references ------------------------------------------------------------------------------------

    def resolve(self, ref: Any) -> tuple[bool, Any]:
        """(found, target) for a local reference: `#`, `#/a/b/0`, `#/$defs/X` (escapes ~0 ~1, %xx)."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return False, None
        pointer = unquote(ref[1:])
        if pointer and not pointer.startswith("/"):
            return False, None  # "#anchor": named anchors are not resolved
        node: Any = self.root
        for raw in pointer.split("/")[1:] if pointer else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return False, None
        return True, node

    # --- nodes -----------------------------------------------------------------------------------------

    def node(self, schema: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any] | None:
        """A converted subschema; None for `false` (nothing matches)."""
        if schema is True or schema is None:
            return {}
        if schema is False:
            return None
        if not isinstance(schema, dict):
            return {}  # not a schema: accept anything rather than fail the tool
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            return _stub(schema, "nested too deep to describe here")
        if "$ref" in schema:
            ref = schema["$ref"]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if ref in refs:
                return _stub({**self._target_dict(ref), **rest}, "recursive: the same shape as an enclosing value")
            found, target = self.resolve(ref)
            if not found:
                return _stub(rest, f"see {ref}" if isinstance(ref, str) else "an unresolved reference")
            if target is False:
                return None
            merged = {**target, **rest} if isinstance(target, dict) else rest
            return self.node(merged, depth, (*refs, ref))
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in SCALARS:
                scalar = _scalar(key, value)
                if scalar is not None:
                    out[key] = scalar
            elif key == "properties":
                props = self.properties(value, depth, refs)
                if props is not None:
                    out[key] = props
            elif key == "additionalProperties":
                extra = value if isinstance(value, bool) else self.node(value, depth + 1, refs)
                out[key] = False if extra is None else extra
            elif key == "items":
                if isinstance(value, list):  # draft-4 tuple form: any of the positions' schemas
                    value = {"anyOf": value} if value else True
                items = self.node(value, depth + 1, refs)
                if items is None:  # `items: false`: the array must be empty
                    out["maxItems"] = 0
                else:
                    out[key] = items
            elif key in SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.node(v, depth + 1, refs) for v in value]
        return _simplify(out)

    def properties(self, value: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        out: dict[str, Any] = {}
        for name, sub in value.items():
            converted = self.node(sub, depth + 1, refs)
            if converted is not None:  # a `false` property may not be present: leave it out
                out[str(name)] = typed(converted)
        return out

    def _target_dict(self, ref: str) -> dict[str, Any]:
        found, target = self.resolve(ref)
        return {"description": target["description"]} if found and isinstance(target, dict) and isinstance(
            target.get("description"), str) else {}  # fmt: skip


def _scalar(key: str, value: Any) -> Any:
    """A non-schema keyword's value if it is well formed; None drops it."""
    if key == "type":
        types = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        kept = [t for t in types if t in JSON_TYPES]
        return None if not kept else kept[0] if len(kept) == 1 else list(dict.fromkeys(kept))
    if key == "description":
        return value if isinstance(value, str) else None
    if key == "required":
        return [str(v) for v in value if isinstance(v, str)] if isinstance(value, list) else None
    if key == "enum":
        return list(value) if isinstance(value, list) and value else None
    if key in ("format", "pattern"):
        return value if isinstance(value, str) else None
    if key == "uniqueItems":
        return value if isinstance(value, bool) else None
    if key in ("default", "const"):
        return value
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stub(schema: dict[str, Any], why: str) -> dict[str, Any]:
    """`{"type": "object"}` with the node's own description and why it stops here."""
    desc = schema.get("description") if isinstance(schema.get("description"), str) else ""
    return {"type": "object", "description": f"{desc} ({why})".strip()}


def _simplify(out: dict[str, Any]) -> dict[str, Any]:
    """Drop impossible options, collapse Optional[X] and single options, merge allOf of objects."""
    for key in ("anyOf", "oneOf"):
        if key not in out:
            continue
        options = [o for o in out[key] if o is not None]  # `false` options can never match
        if not options or any(o == {} for o in options):
            out.pop(key)  # one option takes anything (or none can match: left to the server to refuse)
            continue
        real = [o for o in options if o.get("type") != "null"]
        if len(real) == 1:  # X or null (Optional[X]) -> X, so the property keeps one plain type
            out.pop(key)
            out = {**real[0], **out}
        else:
            out[key] = options
    if "allOf" in out:
        for part in out.pop("allOf"):
            if part is not None:  # a `false` part: left to the server to refuse
                out = _merge(out, part)
    if "required" in out and isinstance(out.get("properties"), dict):
        out["required"] = [r for r in dict.fromkeys(out["required"]) if r in out["properties"]]
    return out


def _merge(base: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in part.items():
        if key == "properties" and isinstance(out.get("properties"), dict):
            out["properties"] = {**value, **out["properties"]}
        elif key == "required" and isinstance(out.get("required"), list):
            out["required"] = [*out["required"], *value]
        else:
            out.setdefault(key, value)
    return out


def typed(prop: dict[str, Any]) -> dict[str, Any]:
    """The same property with a `type`: from enum/const values, its options, its shape, or string."""
    if "type" in prop:
        return prop
    values = prop.get("enum") or ([prop["const"]] if "const" in prop else [])
    if values:
        kinds = list(dict.fromkeys(_PY_TYPES.get(type(v), "string") for v in values if v is not None))
        return {"type": kinds[0] if len(kinds) == 1 else kinds or "string", **prop}
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list):
        kinds = list(dict.fromkeys(t for o in options for t in _types_of(o)))
        if kinds:
            return {"type": kinds[0] if len(kinds) == 1 else kinds, **prop}
    if "properties" in prop or "additionalProperties" in prop:
        return {"type": "object", **prop}
    if "items" in prop or "maxItems" in prop:
        return {"type": "array", **prop}
    return {"type": "string", **prop}


def _types_of(option: Any) -> list[str]:
    if not isinstance(option, dict):
        return []
    kind = typed(option).get("type")
    return [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []


def convert_parameters(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """(the parameters schema the platform takes, "") or (None, why not). Never raises."""
    try:
        return _convert(raw), ""
    except _Unconvertible as exc:
        return None, str(exc)
    except Exception as exc:  # a converter bug must cost one tool, not the session
        log.debug("schema conversion failed", exc_info=True)
        return None, f"{type(exc).__name__}: {exc}"


def _convert(raw: Any) -> dict[str, Any]:
    if raw is None or raw is True or raw == {}:
        return {"type": "object", "properties": {}}
    if raw is False:
        raise _Unconvertible("the input schema is `false`: no call could ever be valid")
    if not isinstance(raw, dict):
        raise _Unconvertible(f"the input schema is a {type(raw).__name__}, not an object schema")
    converter = _Converter(raw)
    body = converter.node(raw, 0, ())
    if body is None:
        raise _Unconvertible("the input schema is `false`: no call could ever be valid")
    for key in ("anyOf", "oneOf"):  # a union of objects at the top: one object with every property, optional
        if key in body and "properties" not in body:
            merged: dict[str, Any] = {}
            for option in body.pop(key):
                if isinstance(option, dict):
                    merged.update(option.get("properties") or {})
            body["properties"] = merged
    kind = body.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise _Unconvertible(f"the input schema describes a {kind}, not an object of named arguments")
    body["type"] = "object"
    body.setdefault("properties", {})
    size = len(json.dumps(body, ensure_ascii=False, allow_nan=False))  # also proves it is JSON
    if size > MAX_SCHEMA_BYTES:
        raise _Unconvertible(f"the converted schema is {size:,} bytes (limit {MAX_SCHEMA_BYTES:,})")
    return body


def function_schema(name: str, description: str, params: type[BaseModel]) -> dict[str, Any]:
    """A kimi tool (pydantic params) as the function schema sent to the model."""
    body, problem = convert_parameters(params.model_json_schema())
    if body is None:  # our own models always convert; keep the tool callable if one ever does not
        log.warning("tool %s: schema not converted (%s)", name, problem)
        body = {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": body}}


def clean_json_schema(raw: Any) -> dict[str, Any]:
    """A schema from elsewhere made acceptable; one that cannot be converted becomes an empty object."""
    body, _problem = convert_parameters(raw)
    return body if body is not None else {"type": "object", "properties": {}}
