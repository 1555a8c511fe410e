"""Function schemas the Kimi API accepts: every property typed, refs inlined, no titles. Written against the
public functions (function_schema, clean_json_schema) so a rewrite of their insides keeps these checks."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.schema import clean_json_schema, function_schema


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    old: str = Field(description="Text to find.")
    count: int = 1


class Params(BaseModel):
    path: str = Field(description="A path.")
    limit: int | None = Field(None, description="Optional limit.")
    mode: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED
    edit: Inner | None = None
    edits: list[Inner] | None = None
    ratio: float = 0.5
    flag: bool = False


def properties_typed(node: Any) -> bool:
    """Every property of every object in the schema has a type."""
    if isinstance(node, list):
        return all(properties_typed(n) for n in node)
    if not isinstance(node, dict):
        return True
    for prop in (node.get("properties") or {}).values():
        if "type" not in prop:
            return False
    return all(properties_typed(v) for v in node.values())


def no_key(node: Any, key: str) -> bool:
    if isinstance(node, list):
        return all(no_key(n, key) for n in node)
    if isinstance(node, dict):
        return key not in node and all(no_key(v, key) for v in node.values())
    return True


def test_a_params_model_becomes_a_function_with_typed_properties_and_no_refs_or_titles() -> None:
    schema = function_schema("Edit", "Edit a file.", Params)
    assert schema["type"] == "function" and schema["function"]["name"] == "Edit"
    assert schema["function"]["description"] == "Edit a file."
    body = schema["function"]["parameters"]
    assert body["type"] == "object" and body["required"] == ["path"]
    assert properties_typed(body) and no_key(body, "$ref") and no_key(body, "title") and no_key(body, "$defs")


def test_optional_fields_keep_their_plain_type_and_description() -> None:
    props = function_schema("Edit", "d", Params)["function"]["parameters"]["properties"]
    assert props["limit"]["type"] == "integer" and props["limit"]["description"] == "Optional limit."
    assert props["edit"]["type"] == "object" and props["edit"]["properties"]["old"]["type"] == "string"
    assert props["edits"]["type"] == "array" and props["edits"]["items"]["properties"]["count"]["type"] == "integer"


def test_enums_and_literals_are_typed_strings_with_their_values() -> None:
    props = function_schema("Edit", "d", Params)["function"]["parameters"]["properties"]
    assert props["mode"]["type"] == "string" and props["mode"]["enum"] == ["a", "b"]
    assert props["colour"]["type"] == "string" and props["colour"]["enum"] == ["red", "blue"]
    assert props["ratio"]["type"] == "number" and props["flag"]["type"] == "boolean"


def test_an_empty_params_model_is_an_empty_object() -> None:
    class Nothing(BaseModel):
        pass

    body = function_schema("Noop", "d", Nothing)["function"]["parameters"]
    assert body["type"] == "object" and body["properties"] == {}


def test_a_foreign_schema_gets_refs_inlined_and_every_property_typed() -> None:
    raw = {
        "type": "object",
        "title": "Args",
        "properties": {
            "target": {"$ref": "#/definitions/Target"},
            "level": {"enum": [1, 2, 3]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "anything": {"description": "no type given"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "definitions": {"Target": {"type": "object", "properties": {"name": {"type": "string", "title": "N"}}}},
    }
    body = clean_json_schema(raw)
    props = body["properties"]
    assert props["target"]["type"] == "object" and props["target"]["properties"]["name"] == {"type": "string"}
    assert props["level"]["type"] == "integer"
    either = props["either"]["type"]
    assert set(either if isinstance(either, list) else [either]) <= {"string", "integer"}
    assert props["anything"]["type"] == "string" and props["maybe"]["type"] == "string"
    assert properties_typed(body) and no_key(body, "$ref") and no_key(body, "title") and no_key(body, "definitions")


def test_a_foreign_schema_without_type_or_properties_becomes_an_object() -> None:
    assert clean_json_schema({}) == {"type": "object", "properties": {}}
    assert raw_untouched({"$defs": {}, "properties": {}})


def raw_untouched(raw: dict[str, Any]) -> bool:
    before = dict(raw)
    clean_json_schema(raw)
    return raw == before
