"""The schema converter: generated schemas never crash it, real servers' tool lists convert, and a session
with a server of awkward (legal) schemas works end to end."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kimi_cli.tools.schema import MAX_DEPTH, convert_parameters, function_schema

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TESTS_DIR, require, result_json, run_kimi, tool_call, tool_results, trust_folder

ROOT = ROOT_DIR
NODE_BIN = ROOT / ".ci" / "node" / "node_modules" / ".bin"
FIXTURE = TESTS_DIR / "mcp_fixture_server.py"
DROPPED_KEYS = {"$ref", "$defs", "definitions", "$schema", "$id", "strict", "title", "$comment"}


def schema_nodes(root: dict[str, Any]) -> list[dict[str, Any]]:
    """Every subschema of a converted schema (property names are data, not keywords, so they are skipped)."""
    found: list[dict[str, Any]] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append(node)
        if isinstance(node.get("properties"), dict):
            stack.extend(node["properties"].values())
        stack.extend(node[k] for k in ("items", "additionalProperties") if isinstance(node.get(k), dict))
        for key in ("anyOf", "oneOf", "allOf"):
            stack.extend(node.get(key) or [])
    return found


def check_converted(out: dict[str, Any]) -> None:
    json.dumps(out, allow_nan=False)
    assert out["type"] == "object" and isinstance(out["properties"], dict)
    for node in schema_nodes(out):
        assert not DROPPED_KEYS & set(node), node
        for name, prop in (node.get("properties") or {}).items():
            assert isinstance(prop, dict) and "type" in prop, (name, prop)


# --- generated schemas -----------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "x", "items", "$ref", "properties"])
REFS = st.sampled_from(
    ["#", "#/$defs/A", "#/$defs/B", "#/definitions/C", "#/properties/a", "#/properties/a/items",
     "#/properties/b/anyOf/0", "#/$defs/A/properties/x", "#/nope/1", "#anchor", "other.json#/x", "#/$defs/A~1B",
     "#/%24defs/A"]
)  # fmt: skip
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=5))  # fmt: skip
TYPES = st.one_of(st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null", "bogus"]),
                  st.lists(st.sampled_from(["string", "null", "object"]), max_size=3))  # fmt: skip


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES,
            "properties": st.one_of(st.dictionaries(NAMES, children, max_size=4), SCALARS),
            "items": st.one_of(children, st.lists(children, max_size=2)),
            "anyOf": st.lists(children, max_size=3),
            "oneOf": st.lists(children, max_size=3),
            "allOf": st.lists(children, max_size=2),
            "$ref": REFS,
            "$defs": st.dictionaries(st.sampled_from(["A", "B", "A/B"]), children, max_size=2),
            "definitions": st.dictionaries(st.just("C"), children, max_size=1),
            "required": st.one_of(st.lists(NAMES, max_size=3), SCALARS),
            "enum": st.one_of(st.lists(SCALARS, max_size=3), SCALARS),
            "const": SCALARS,
            "description": st.one_of(st.text(max_size=8), SCALARS),
            "additionalProperties": children,
            "strict": st.booleans(),
            "$schema": st.text(max_size=5),
            "title": st.text(max_size=5),
            "default": SCALARS,
            "x-vendor": SCALARS,
        },
    )


SCHEMAS = st.recursive(st.one_of(st.booleans(), st.just({}), st.builds(dict, type=TYPES)), _extend, max_leaves=40)


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS)
def test_generated_schemas_never_raise_and_always_come_out_clean(raw: Any) -> None:
    out, problem = convert_parameters(raw)
    if out is None:
        assert isinstance(problem, str) and problem
        return
    assert problem == ""
    check_converted(out)


@settings(max_examples=150, deadline=None, database=None)
@given(SCHEMAS)
def test_generated_schemas_as_an_object_root_convert(raw: Any) -> None:
    """Wrapped in an object root (what a tool sends), every generated schema gives a usable tool."""
    out, problem = convert_parameters({"type": "object", "properties": {"a": raw, "b": {"anyOf": [raw]}},
                                       "$defs": {"A": raw, "B": {"$ref": "#/$defs/A"}}})  # fmt: skip
    assert out is not None, problem
    check_converted(out)


def test_recursive_pointer_and_boolean_schemas_convert_as_expected() -> None:
    sys.path.insert(0, str(FIXTURE.parent))
    import mcp_fixture_server as fixture

    tree, _ = convert_parameters(fixture.TREE)
    assert tree is not None
    node = tree["properties"]["root"]
    assert node["type"] == "object" and node["required"] == ["name"]
    child = node["properties"]["children"]["items"]
    assert child["type"] == "object" and "recursive" in child["description"] and "A tree node" in child["description"]
    pointer, _ = convert_parameters(fixture.POINTER)
    assert pointer is not None and pointer["properties"]["second"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
    }
    loose, _ = convert_parameters(fixture.LOOSE)
    assert loose is not None
    assert loose["properties"]["count"]["type"] == "integer" and "forbidden" not in loose["properties"]
    assert "$schema" not in loose
    assert convert_parameters({"type": "string"})[0] is None
    out, problem = convert_parameters(fixture.HUGE)
    assert out is None and "bytes (limit 100,000)" in problem


def test_depth_and_size_are_bounded() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):  # deeper than Python's recursion limit would allow a naive walk
        deep = {"type": "object", "properties": {"n": deep}}
    out, problem = convert_parameters(deep)
    assert out is not None, problem
    depth, node = 0, out
    while "properties" in node:
        node, depth = node["properties"]["n"], depth + 1
    assert depth <= MAX_DEPTH + 1 and node["type"] == "object" and "nested too deep" in node["description"]
    # shared references that double at every level: 2^40 nodes if expanded naively
    defs = {
        f"L{i}": {
            "type": "object",
            "properties": {"l": {"$ref": f"#/$defs/L{i + 1}"}, "r": {"$ref": f"#/$defs/L{i + 1}"}},
        }
        for i in range(40)
    }
    out, problem = convert_parameters({"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/L0"}}})
    assert out is None or len(json.dumps(out)) <= 100_000, problem  # fmt: skip


def test_kimi_own_tools_and_subagent_kinds_use_the_same_converter() -> None:
    from kimi_cli.agent.toolbox import default_tools

    for schema in default_tools().schemas():
        check_converted(schema["function"]["parameters"])
    from kimi_cli.tools.subagent import AgentParams

    check_converted(function_schema("Agent", "d", AgentParams)["function"]["parameters"])


# --- real servers' tool lists, captured through the MCP client -----------------------------------------


def _server_commands(tmp: Path) -> dict[str, tuple[str, list[str]]]:
    repo = tmp / "gitrepo"
    repo.mkdir()
    import subprocess

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    python_bin = Path(sys.executable).parent
    found = {
        "server-everything": (str(NODE_BIN / "mcp-server-everything"), []),
        "server-filesystem": (str(NODE_BIN / "mcp-server-filesystem"), [str(tmp)]),
        "server-memory": (str(NODE_BIN / "mcp-server-memory"), []),
        "server-sequential-thinking": (str(NODE_BIN / "mcp-server-sequential-thinking"), []),
        "mcp-server-git": (str(python_bin / "mcp-server-git"), ["--repository", str(repo)]),
        "mcp-server-time": (str(python_bin / "mcp-server-time"), ["--local-timezone", "UTC"]),
    }
    for name, (command, _args) in found.items():
        present = Path(command).exists() or shutil.which(command)
        require(f"the MCP server {name}", present, f"{command} is missing; .ci/run installs it (npm or PyPI)")
    return found


async def _list_tools(command: str, args: list[str], cwd: Path) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env={"PATH": "/usr/bin:/bin",
                                   "HOME": str(cwd)})  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await asyncio.wait_for(session.initialize(), 60)
        return list((await session.list_tools()).tools)


def test_six_real_servers_tool_lists_all_convert(tmp_path: Path) -> None:
    import os

    commands = _server_commands(tmp_path)
    total = 0
    for name, (command, args) in commands.items():
        tools = asyncio.run(_list_tools(command, args, tmp_path))
        assert tools, name
        for tool in tools:
            out, problem = convert_parameters(tool.input_schema)
            assert out is not None, (name, tool.name, problem)
            check_converted(out)
            total += 1
    assert total >= 25
    assert os.environ  # the servers ran with a minimal environment; nothing leaked into ours


# --- end to end -------------------------------------------------------------------------------------------


def awkward_config(repo: Path, *servers: tuple[str, list[str]]) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    config = {name: {"command": sys.executable, "args": [str(FIXTURE), *args]} for name, args in servers}
    (repo / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": config}))
    (repo / ".kimi" / "config.toml").write_text('[approval]\nallow = ["mcp__*"]\n')
    trust_folder(repo)  # the user's own project: its servers may start (kimi_cli.hostsafe.trust)


@pytest.mark.parametrize("output_format", ["json", "stream-json", "text"])
def test_a_session_with_awkward_schemas_works_and_drops_only_the_bad_tool(
    repo: Path, env: dict, server: ScriptedModelServer, output_format: str
) -> None:
    awkward_config(repo, ("odd", ["awkward"]))
    tree = {"root": {"name": "a", "children": [{"name": "b", "children": []}]}}
    server.add(
        {"tool_calls": [tool_call("mcp__odd__tree", tree, "t1"), tool_call("mcp__odd__pointer", {"second": {"x": 2}},
                        "p1"), tool_call("mcp__odd__loose", {"value": 3}, "l1")]},
        {"text": "all done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "use the tools", "--output-format", output_format], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    # the server may still be starting at the first request (its tools then join the end of the block, or
    # messages[].tools on K3 models): read the last one
    names = server.offered_tools(-1)
    assert {"mcp__odd__tree", "mcp__odd__pointer", "mcp__odd__loose"} <= set(names)
    assert "mcp__odd__huge" not in names and "ReadFile" in names
    last = server.requests[-1]
    for tool in [*last["tools"], *(t for m in last["messages"] for t in m.get("tools") or [])]:
        check_converted(tool["function"]["parameters"])
    results = [json.loads(r) for r in tool_results(server, 1)]
    assert results == [{"tool": "tree", "arguments": tree}, {"tool": "pointer", "arguments": {"second": {"x": 2}}},
                       {"tool": "loose", "arguments": {"value": 3}}]  # fmt: skip
    if output_format == "json":  # the JSON result carries no notices
        assert result_json(proc)["text"] == "all done"
    else:
        told = proc.stderr + proc.stdout
        assert told.count("tool 'huge' is left out") == 1 and "'odd'" in told and "bytes (limit" in told


def test_tools_mcp_does_not_allow_are_left_out_one_by_one_and_their_server_works(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """The SDK checks a tools/list page as a whole: one tool without an inputSchema (or a null one, or a
    string) failed the listing and every tool of the server was lost. Each is now left out alone, with a
    notice, across pages; the array-rooted one reaches our converter, which leaves it out too."""
    awkward_config(repo, ("odd", ["invalid"]))
    server.add(
        {"tool_calls": [tool_call("mcp__odd__fine", {"text": "a"}, "f1"), tool_call("mcp__odd__fine2", {}, "f2")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "use the tools", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    names = set(server.offered_tools(-1))
    assert {"mcp__odd__fine", "mcp__odd__fine2"} <= names
    assert not names & {"mcp__odd__bare", "mcp__odd__nulled", "mcp__odd__listy", "mcp__odd__stringy"}
    results = [json.loads(r) for r in tool_results(server, 1)]
    assert results == [{"tool": "fine", "arguments": {"text": "a"}}, {"tool": "fine2", "arguments": {}}]
    told = proc.stdout + proc.stderr
    for tool in ("bare", "nulled", "stringy", "listy"):
        assert told.count(f"tool '{tool}' is left out") == 1, told
    assert "inputSchema" in told and "is not available" not in told
    listing = run_kimi(["mcp", "list"], repo, env, timeout=120)
    assert "ready, 3 tools (3 left out: not valid MCP; kimi mcp test odd)" in listing.stdout, listing.stdout
    tested = run_kimi(["mcp", "test", "odd"], repo, env, timeout=120)
    assert tested.returncode == 0 and "fine2" in tested.stdout, tested.stdout
    assert "bare: left out, not valid MCP (inputSchema: Field required)" in tested.stdout, tested.stdout
