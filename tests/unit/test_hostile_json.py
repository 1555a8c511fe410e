"""Hostile JSON never crashes kimi: the model's final answers (--output-schema), its tool arguments, output
schemas, stream chunks and hook answers are decoded within bounds (kimi_cli.util.jsonsafe) and checked without
recursing without end. Fuzzed with hypothesis: deep nesting, huge values, invalid UTF-8, lone surrogates,
NaN, and schemas built from references.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kimi_cli.agent.toolbox import default_tools
from kimi_cli.errors import KimiError
from kimi_cli.frontends.headless.output_schema import OutputSchema, parse_answer
from kimi_cli.llm.failures import HTTPFailure, StreamIncomplete
from kimi_cli.llm.sse import ServerSentEvent, chunk_from_event
from kimi_cli.util import jsonsafe

# no example database: nothing written into the tree (it may belong to another user)
FUZZ = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
TOOLS = default_tools()


def nested(depth: int, opener: str = "[", closer: str = "]", core: str = "1") -> str:
    return opener * depth + core + closer * depth


deep = st.builds(
    lambda depth, kind: nested(depth, *kind),
    st.integers(1, 20_000),
    st.sampled_from([("[", "]"), ('{"a":', "}"), ('[{"k":[', "]}]")]),
)
surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)
hostile_text = st.one_of(
    deep,
    json_values.map(json.dumps),
    surrogates.map(lambda s: json.dumps({"path": s, "content": s}, ensure_ascii=True)),
    surrogates,
    st.binary(max_size=64).map(lambda b: b.decode("utf-8", errors="surrogateescape")),
    st.sampled_from(["NaN", "[Infinity]", "[1e999]", "1" * 5000, '"' + "x" * 100_000, "[" * 100_000, "]" * 50]),
    st.text(max_size=200),
)


# --- the loader -------------------------------------------------------------------------------------------


@FUZZ
@given(hostile_text)
def test_the_bounded_loader_raises_only_value_errors_and_returns_printable_json(text: str) -> None:
    try:
        value = jsonsafe.loads(text)
    except ValueError:
        return
    json.dumps(value, allow_nan=False)  # within the depth bound, finite: json.dumps never recurses too far
    jsonsafe.dumps(value).encode("utf-8")  # lone surrogates included


@FUZZ
@given(st.binary(max_size=200))
def test_bytes_that_are_not_utf8_are_a_value_error(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        jsonsafe.loads(data)


def test_depth_is_counted_outside_strings_only() -> None:
    assert jsonsafe.depth_of("[" * 30 + '"' + "[" * 40 + '"' + "]" * 30, 40) == 30
    assert jsonsafe.loads('{"a": "[[[[[[[[[[' + "[" * 200 + '"}') == {"a": "[" * 210}
    with pytest.raises(jsonsafe.JSONLimitError, match="deeper than 64"):
        jsonsafe.loads(nested(65))
    assert jsonsafe.loads(nested(64)) is not None


# --- tool arguments -----------------------------------------------------------------------------------------


@FUZZ
@given(st.sampled_from(["ReadFile", "WriteFile", "StrReplaceFile", "Glob", "Grep", "ReadMediaFile"]), hostile_text)
def test_tool_arguments_never_raise_out_of_prepare(name: str, raw: str) -> None:
    call = TOOLS.prepare("c1", name, raw)
    assert call.error is not None or call.params is not None
    if call.error is not None:
        assert call.error.startswith("error:")


def test_a_thousand_nested_arrays_are_an_answer_the_model_can_read() -> None:
    call = TOOLS.prepare("c1", "ReadFile", nested(1000))
    assert call.error is not None and "nested deeper than 64 levels" in call.error


# --- final answers and output schemas ------------------------------------------------------------------------


def schema_at(tmp_path: Path, schema: object) -> OutputSchema:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return OutputSchema.load(str(path))


@FUZZ
@given(hostile_text)
def test_an_answer_is_checked_without_raising(tmp_path: Path, text: str) -> None:
    schema = OutputSchema({"type": "object", "properties": {"a": {"type": "array", "items": {"$ref": "#"}}}}, "s")
    value, errors = schema.check(text)
    assert errors or value is not None or text.strip() == "null"
    with contextlib.suppress(ValueError):
        parse_answer(text)


def test_an_answer_1100_arrays_deep_is_a_mismatch_not_a_crash() -> None:
    schema = OutputSchema({"type": "array"}, "s")
    value, errors = schema.check(nested(1100))
    assert value is None and "nested deeper than 64 levels" in errors[0]


refs = st.sampled_from(["#", "#/$defs/a", "#/$defs/b", "#/properties/x", "#/$defs/missing", "https://example.com/s"])
schemas = st.recursive(
    st.booleans() | st.fixed_dictionaries({"type": st.sampled_from(["object", "array", "integer", "string"])}),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"$ref": refs}),
        st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"not": inner}),
        st.fixed_dictionaries({"items": inner}),
        st.fixed_dictionaries({"properties": st.fixed_dictionaries({"x": inner})}),
        st.fixed_dictionaries(
            {"$defs": st.fixed_dictionaries({"a": inner, "b": inner}), "anyOf": st.lists(inner, min_size=1)}
        ),
    ),
    max_leaves=12,
)


@FUZZ
@given(schemas, json_values)
def test_a_schema_either_loads_and_checks_any_value_or_is_a_usage_error(
    tmp_path: Path, schema: object, value: object
) -> None:
    try:
        loaded = schema_at(tmp_path, schema)
    except KimiError as exc:
        assert exc.exit_code == 2
        return
    _value, errors = loaded.check(json.dumps(value))
    assert isinstance(errors, list)


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "#"}, {"anyOf": [{"not": {"$ref": "#"}}]},
     {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}],
)  # fmt: skip
def test_a_ref_loop_that_never_reads_into_the_value_is_refused_when_the_schema_loads(
    tmp_path: Path, schema: object
) -> None:
    with pytest.raises(KimiError, match="a \\$ref loop never reads into the value") as caught:
        schema_at(tmp_path, schema)
    assert caught.value.exit_code == 2


def test_a_recursive_tree_schema_still_checks_deep_trees(tmp_path: Path) -> None:
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["kids"]}
    schema = schema_at(tmp_path, tree)
    value: dict = {"kids": []}
    for _ in range(30):
        value = {"kids": [value]}
    assert schema.check(json.dumps(value)) == (value, [])
    assert schema.check(json.dumps({"kids": [{"kid": 1}]}))[1] == ["at $.kids[0]: 'kids' is a required property"]


# --- stream chunks and hook answers --------------------------------------------------------------------------


@FUZZ
@given(hostile_text)
def test_a_stream_chunk_is_a_chunk_or_a_stream_error(payload: str) -> None:
    try:
        chunk = chunk_from_event(ServerSentEvent(payload))
    except (StreamIncomplete, HTTPFailure):
        return
    assert chunk is None or isinstance(chunk, dict)


@FUZZ
@given(hostile_text)
def test_a_hooks_answer_is_read_without_raising(stdout: str) -> None:
    from kimi_cli.extensions.hooks.config import Hook
    from kimi_cli.extensions.hooks.runner import HookRun
    from kimi_cli.extensions.hooks.verdict import read_runs

    hook = Hook("PreToolUse", "true", None, 5.0, "allow", "user", 0)
    read_runs("PreToolUse", [HookRun(hook, 0, "{" + stdout), HookRun(hook, 0, stdout)])
