"""Turn a pydantic model into the function schema the Kimi API accepts: every property typed, no refs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def function_schema(name: str, description: str, params: type[BaseModel]) -> dict[str, Any]:
    raw = params.model_json_schema()
    defs = raw.pop("$defs", {})
    body = _clean(raw, defs)
    body.setdefault("type", "object")
    body.setdefault("properties", {})
    return {"type": "function", "function": {"name": name, "description": description, "parameters": body}}


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        out[key] = _clean(value, defs)
    if "anyOf" in out:
        # Optional[X] arrives as anyOf [X, null]: collapse it so the property keeps a plain type.
        options = [o for o in out["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            out.pop("anyOf")
            out = {**options[0], **out}
    if "properties" in out:
        out["properties"] = {k: _ensure_type(v) for k, v in out["properties"].items()}
    return out


def _ensure_type(prop: dict[str, Any]) -> dict[str, Any]:
    if "type" in prop:
        return prop
    if prop.get("enum"):
        return {"type": _JSON_TYPES.get(type(prop["enum"][0]), "string"), **prop}
    if "anyOf" in prop:
        types = sorted({o.get("type") for o in prop["anyOf"] if o.get("type")})
        if types:
            return {"type": types[0] if len(types) == 1 else types, **prop}
    return {"type": "string", **prop}


def clean_json_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema from elsewhere (an MCP server) made acceptable: refs inlined, every property typed."""
    raw = dict(raw)
    defs = raw.pop("$defs", raw.pop("definitions", {}))
    body = _clean(raw, defs if isinstance(defs, dict) else {})
    body.setdefault("type", "object")
    body.setdefault("properties", {})
    return body
