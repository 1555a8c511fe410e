"""The SDK's event models (kimi_cli.sdk.events) and headless.schema.json agree: the same event types, the same
required fields, the same schema version; a stream-json object the schema accepts parses into its model."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from pydantic import ValidationError

from kimi_cli.sdk.events import EVENT_MODELS, EVENT_SCHEMA_VERSION, Compacted, Result, parse_event

SCHEMA = json.loads(resources.files("kimi_cli.frontends.headless").joinpath("headless.schema.json").read_text())
DEFS = SCHEMA["$defs"]


def schema_required() -> dict[str, set[str]]:
    """Each `type` the schema knows -> the fields it requires."""
    out = {"result": set(DEFS["result"]["required"]), "init": set(DEFS["init"]["required"])}
    for name in DEFS["event"]["properties"]["type"]["enum"]:
        out[name] = {"type"}
    for rule in DEFS["event"]["allOf"]:
        kind = rule["if"]["properties"]["type"]
        for name in kind.get("enum", [kind.get("const")]):
            out[name] |= set(rule["then"]["required"])
    return out


def model_required() -> dict[str, set[str]]:
    out = {}
    for model in EVENT_MODELS:
        name = model.model_fields["type"].default
        out[name] = {"type"} | {k for k, f in model.model_fields.items() if f.is_required()}
    return out


def test_models_and_schema_know_the_same_types_and_required_fields() -> None:
    assert model_required() == schema_required()


def test_the_schema_version_is_the_sdks() -> None:
    assert SCHEMA["x-kimi-schema-version"] == EVENT_SCHEMA_VERSION


def test_every_property_the_schema_names_is_a_field_of_its_model() -> None:
    models = {m.model_fields["type"].default: m for m in EVENT_MODELS}
    for kind in ("init",):
        assert set(DEFS[kind]["properties"]) <= set(models[kind].model_fields)


def test_parse_keeps_fields_a_later_kimi_adds_and_refuses_a_missing_one() -> None:
    event: Any = parse_event({"type": "step_begin", "step": 3, "new_field": "x"})
    assert event.step == 3 and event.new_field == "x"
    assert isinstance(parse_event({"type": "compacted"}), Compacted)
    with pytest.raises(ValidationError):
        parse_event({"type": "tool_call", "id": "a", "name": "Shell"})
    with pytest.raises(ValidationError):
        parse_event({"type": "no_such_event"})


def test_result_cost_usd_is_none_where_nothing_priced_it() -> None:
    base = {"type": "result", "reason": "done", "is_error": False, "exit_code": 0, "error": None, "message": "",
            "session_id": "s", "text": "", "steps": 1, "usage": {}, "timing": {}, "model": None,
            "provider": None, "effort": None}  # fmt: skip
    assert Result(**base, cost={"total_usd": 0.0, "priced": False}).cost_usd is None
    assert Result(**base, cost={"total_usd": 0.25, "priced": True}).cost_usd == 0.25
