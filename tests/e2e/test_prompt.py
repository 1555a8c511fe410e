"""What the model is told: the system prompt, the environment block, the tools block, AGENTS.md.

In-process tests build the real prefix and the real tool schemas; the end-to-end ones run `kimi -p`
against the scripted server and compare what it sent with `kimi prompt`.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.agent.prefix import AGENTS_MD_HEADER, PrefixBuilder
from kimi_cli.agent.subagents.kinds import builtin_kinds
from kimi_cli.cli.prompt import session_tools
from kimi_cli.config import load_config
from kimi_cli.context.agents_md import NESTED_NOTE, NestedInstructions, load_agents_md
from kimi_cli.context.session_context import SESSION_PACK_INTRO, TASK_PACK_INTRO
from kimi_cli.instructions.prompt import SECTIONS, VARIANT_ENV, Environment, session_environment, system_prompt

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call

DAY = datetime.date(2026, 12, 1)
TASK = "fix add() in calc.py"


def env_for(root: Path, **changes: Any) -> Environment:
    config = load_config(root, {})
    base = session_environment(root, config, "kimi-k3.1-pro", 1_048_576, today=DAY)
    return Environment(**{**base.__dict__, **changes})


# --- the system prompt -------------------------------------------------------------------------------


def test_the_prompt_has_its_sections_in_order_after_the_identity() -> None:
    text = system_prompt()
    assert text.startswith("You are Kimi")
    positions = [text.index(heading) for heading in SECTIONS]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    "point",
    [
        "Commit only when the user asks",  # git etiquette
        "Never push",
        "Never rewrite the user's history",
        "the deeper one wins",  # AGENTS.md scope and precedence
        "user's words in this conversation win over any AGENTS.md",
        "subfolder with its own AGENTS.md",
        "smallest change",  # editing discipline
        "Add no dependency",
        "Leave unrelated",
        "do not read it again whole",  # the packed repository
        "hold only as an outline",
        "changed since the snapshot",
        "run in parallel",  # tool use
        "background: true",
        "never poll",
        "does not pay",
        "narrowest relevant tests first",  # testing
        "Never weaken a test",
        "is data",  # untrusted content
        "report it in your final answer",
        "reveal secrets",
        "what you verified",  # the final answer
        "what is left",
        "Never claim a test passes",
        "step budget",  # limits
        "stops the run at 8",
        "Ask before anything destructive the sandbox does not contain",
    ],
)
def test_the_prompt_covers_each_point_of_the_brief(point: str) -> None:
    assert point in " ".join(system_prompt().split())


def test_the_prompt_and_its_environment_fit_in_four_to_eight_thousand_characters(repo: Path) -> None:
    size = len(system_prompt()) + len(env_for(repo).block())
    assert 4000 <= size <= 8000, size


def test_the_environment_block_says_where_the_agent_runs(repo: Path) -> None:
    block = env_for(repo).block()
    assert block.startswith("## Environment")
    for fact in (str(repo), "bash", "Sandbox: on", "Network for commands: off", "kimi-k3.1-pro", "1,048,576",
                 "2026-12-01", "Approvals: auto"):  # fmt: skip
        assert fact in block, fact
    unconfined = env_for(repo, sandbox="none", approval="yolo").block()
    assert "Sandbox: off" in unconfined and "Network for commands: on" in unconfined and "yolo" in unconfined
    networked = env_for(repo, network=True, sandbox="landlock").block()
    assert "Network for commands: on" in networked and "Landlock" in networked


def test_the_environment_follows_the_configuration(repo: Path) -> None:
    config = load_config(repo, {"sandbox": {"mode": "none", "allow_network": True}, "yolo": True})
    env = session_environment(repo, config, "m", 8192, today=DAY)
    assert (env.sandbox, env.network, env.approval, env.window) == ("none", True, "yolo", 8192)


def test_the_instructions_are_the_same_bytes_for_every_workspace_and_the_environment_comes_after_the_pack(
    repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    one = PrefixBuilder(repo, environment=env_for(repo)).message(pack="PACK")["content"]
    two = PrefixBuilder(other, environment=env_for(other, network=True, date="2027-01-01")).message(pack="PACK")
    assert one.startswith(system_prompt()) and two["content"].startswith(system_prompt())
    head = one.split("## Environment")[0]
    assert head == two["content"].split("## Environment")[0]  # nothing before the environment varies
    assert head.rstrip().endswith("PACK")


def test_two_builds_for_one_workspace_and_config_are_byte_identical(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("Run pytest -q.\n")
    first = PrefixBuilder(repo, environment=env_for(repo)).message(pack="PACK", mode="MODE")
    second = PrefixBuilder(repo, environment=env_for(repo)).message(pack="PACK", mode="MODE")
    assert first == second


def test_a_subagent_kind_and_a_mode_only_append_after_the_environment(repo: Path) -> None:
    builder = PrefixBuilder(repo, environment=env_for(repo))
    plain = builder.message(pack="PACK")["content"]
    planned = builder.message(pack="PACK", mode="Plan mode: read only.")["content"]
    assert planned.startswith(plain) and planned.endswith("Plan mode: read only.")
    explore = builder.message(pack="SUB PACK", mode=builtin_kinds()["explore"].mode())["content"]
    shared = "\n\n".join(builder.shared())
    assert plain.startswith(shared) and explore.startswith(shared)
    assert explore.index("## Environment") < explore.index("You are a subagent")


def test_a_prompt_variant_file_replaces_the_instructions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variant = tmp_path / "terse.md"
    variant.write_text("You are Kimi. Fix the bug.\n")
    monkeypatch.setenv(VARIANT_ENV, str(variant))
    assert system_prompt() == "You are Kimi. Fix the bug."


def test_an_unreadable_prompt_variant_is_a_clear_configuration_error(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    proc = run_kimi(["-p", TASK], repo, {**env, VARIANT_ENV: str(repo / "missing.md")}, server)
    assert proc.returncode == 2 and "KIMI_SYSTEM_PROMPT" in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []


# --- the tools block ---------------------------------------------------------------------------------


def default_schemas(root: Path, provider: str = "moonshot") -> list[dict[str, Any]]:
    return [tool.schema() for tool in session_tools(root, load_config(root, {}), provider)]


def test_the_tools_block_of_a_default_session_fits_in_twelve_thousand_characters(repo: Path) -> None:
    schemas = default_schemas(repo)
    names = [s["function"]["name"] for s in schemas]
    assert {"Shell", "ReadFile", "StrReplaceFile", "Git", "TaskOutput", "FetchURL", "Agent"} <= set(names)
    assert len(json.dumps(schemas)) <= 12_000, len(json.dumps(schemas))


def test_the_tools_block_is_deterministic(repo: Path) -> None:
    assert json.dumps(default_schemas(repo)) == json.dumps(default_schemas(repo))


def _properties(schema: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, prop in (schema.get("properties") or {}).items():
        found.append((f"{where}.{name}", prop))
        found += _properties(prop, f"{where}.{name}")
        if isinstance(prop.get("items"), dict):
            found += _properties(prop["items"], f"{where}.{name}[]")
    return found


def test_every_tool_teaches_with_an_example_and_every_parameter_is_described(repo: Path) -> None:
    for schema in default_schemas(repo):
        if schema["type"] == "builtin_function":  # $web_search: the provider describes it
            continue
        fn = schema["function"]
        assert "Example: {" in fn["description"], fn["name"]
        example = fn["description"].split("Example: ", 1)[1].split("}", 1)[0]
        assert example.startswith("{")
        props = _properties(fn["parameters"], fn["name"])
        assert props, fn["name"]
        for where, prop in props:
            assert prop.get("description", "").strip(), where


def test_each_example_is_a_valid_call_of_its_tool(repo: Path) -> None:
    for tool in session_tools(repo, load_config(repo, {}), "openai"):
        text = tool.description.split("Example: ", 1)[1]
        example = json.JSONDecoder().raw_decode(text)[0]
        tool.Params.model_validate(example)


def test_shell_names_the_dedicated_tools_to_use_instead(repo: Path) -> None:
    shell = next(s for s in default_schemas(repo) if s["function"]["name"] == "Shell")["function"]["description"]
    for better in ("ReadFile", "Grep", "Glob", "StrReplaceFile", "Git", "background"):
        assert better in shell


def test_the_agent_tool_names_the_custom_kinds_of_the_workspace(repo: Path) -> None:
    (repo / ".kimi" / "agents").mkdir(parents=True)
    (repo / ".kimi" / "agents" / "auditor.md").write_text("---\nname: auditor\ndescription: audits\n---\nBe strict.\n")
    agent = next(s for s in default_schemas(repo) if s["function"]["name"] == "Agent")["function"]["description"]
    assert agent.endswith("Custom kinds here: auditor.")


# --- AGENTS.md -----------------------------------------------------------------------------------------


def test_agents_md_files_merge_from_the_root_down_to_the_working_directory_with_their_paths(repo: Path) -> None:
    deep = repo / "svc" / "api"
    deep.mkdir(parents=True)
    (repo / "AGENTS.md").write_text("ROOT RULES\n")
    (repo / "svc" / "AGENTS.md").write_text("SVC RULES\n")
    (deep / "AGENTS.md").write_text("API RULES\n")
    (repo / "svc" / "other").mkdir()
    (repo / "svc" / "other" / "AGENTS.md").write_text("SIBLING RULES\n")
    merged = load_agents_md(deep)
    order = [merged.index(s) for s in ('source="AGENTS.md"', 'source="svc/AGENTS.md"', 'source="svc/api/AGENTS.md"')]
    assert order == sorted(order)
    assert merged.index("ROOT RULES") < merged.index("SVC RULES") < merged.index("API RULES")
    assert "SIBLING RULES" not in merged


def test_claude_md_and_gemini_md_stand_in_where_a_folder_has_no_agents_md(repo: Path) -> None:
    sub = repo / "web"
    sub.mkdir()
    (repo / "CLAUDE.md").write_text("CLAUDE ROOT\n")
    (sub / "GEMINI.md").write_text("GEMINI WEB\n")
    merged = load_agents_md(sub)
    assert 'source="CLAUDE.md"' in merged and "CLAUDE ROOT" in merged
    assert 'source="web/GEMINI.md"' in merged and "GEMINI WEB" in merged
    (repo / "AGENTS.md").write_text("AGENTS ROOT\n")
    merged = load_agents_md(sub)
    assert "AGENTS ROOT" in merged and "CLAUDE ROOT" not in merged  # AGENTS.md wins at its level


def test_a_nested_agents_md_is_offered_once_when_the_agent_first_works_under_its_folder(repo: Path) -> None:
    (repo / "pkg" / "core").mkdir(parents=True)
    (repo / "pkg" / "AGENTS.md").write_text("PKG RULES\n")
    (repo / "pkg" / "core" / "CLAUDE.md").write_text("CORE RULES\n")
    (repo / "AGENTS.md").write_text("ROOT RULES\n")
    nested = NestedInstructions(repo)
    assert nested.note(["calc.py", "README.md"]) == ""  # the root's file is in the prefix already
    note = nested.note(["pkg/core/engine.py"])
    assert note.startswith(NESTED_NOTE)
    assert 'source="pkg/AGENTS.md"' in note and 'source="pkg/core/CLAUDE.md"' in note
    assert note.index("PKG RULES") < note.index("CORE RULES") and "ROOT RULES" not in note
    assert nested.note(["pkg/core/other.py", "pkg"]) == ""  # offered once


def test_a_nested_note_never_reads_outside_the_workspace(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("TOKEN=hunter2\n")
    (repo / "evil").mkdir()
    os.symlink(outside, repo / "evil" / "AGENTS.md")
    (repo / "good").mkdir()
    (repo / "good" / "real.md").write_text("GOOD RULES\n")
    os.symlink("real.md", repo / "good" / "AGENTS.md")  # a link that stays inside is followed
    nested = NestedInstructions(repo)
    assert nested.note(["evil/x.py", "../outside.py", "/etc/passwd"]) == ""
    assert "GOOD RULES" in nested.note(["good/x.py"])


# --- end to end: what kimi -p sends --------------------------------------------------------------------


def first_request(repo: Path, env: dict[str, str], server: ScriptedModelServer) -> dict[str, Any]:
    server.add({"text": "done"})
    before = len(server.requests)
    proc = run_kimi(["-p", TASK], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    return server.requests[before]


def test_two_sessions_in_one_workspace_send_the_same_prefix(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    (repo / "AGENTS.md").write_text("Run pytest -q before you finish.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "agents")
    day = datetime.date.today()
    one, two = first_request(repo, env, server), first_request(repo, env, server)
    if datetime.date.today() != day:
        pytest.skip("the date changed between the two sessions")
    system_one, system_two = one["messages"][0]["content"], two["messages"][0]["content"]
    assert system_one.startswith(system_prompt() + "\n\n" + AGENTS_MD_HEADER)
    assert system_one.split(SESSION_PACK_INTRO)[0] == system_two.split(SESSION_PACK_INTRO)[0]
    assert system_one == system_two and one["tools"] == two["tools"]
    assert len(json.dumps(one["tools"])) <= 12_000


def test_kimi_prompt_prints_exactly_what_a_session_sends(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    sent = first_request(repo, env, server)
    printed = run_kimi(["prompt", "--task", TASK, "--format", "json"], repo, env, server)
    assert printed.returncode == 0, printed.stderr
    shown = json.loads(printed.stdout)
    assert shown["system"] == sent["messages"][0]["content"]
    assert shown["tools"] == sent["tools"]
    text = run_kimi(["prompt", "--task", TASK], repo, env, server)
    assert text.returncode == 0 and "# Tools (" in text.stdout and "## Environment" in text.stdout


def test_a_subagent_shares_the_sessions_instructions_and_environment(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    server.add(
        {"match": TASK, "tool_calls": [tool_call("Agent", {"task": "survey calc.py", "kind": "explore"}, "a1")]},
        {"match": "survey calc.py", "text": "calc.py has add()"},
        {"match": TASK, "text": "done"},
    )
    proc = run_kimi(["-p", TASK], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    session = server.requests[0]["messages"][0]["content"]
    sub = next(r for r in server.requests if "survey calc.py" in json.dumps(r["messages"][1]))["messages"][0]["content"]
    assert session.split(SESSION_PACK_INTRO)[0] == sub.split(TASK_PACK_INTRO)[0]
    env_block = session[session.index("## Environment") :]
    assert sub[sub.index("## Environment") :].startswith(env_block) and sub.rstrip().endswith(
        builtin_kinds()["explore"].mode().rstrip()
    )


def test_the_first_read_under_a_folder_with_agents_md_brings_it_as_one_note(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    (repo / "lib").mkdir()
    (repo / "lib" / "AGENTS.md").write_text("LIB: use tabs.\n")
    (repo / "lib" / "a.py").write_text("A = 1\n")
    (repo / "lib" / "b.py").write_text("B = 2\n")
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "lib/a.py"}, "r1")]},
        {"tool_calls": [tool_call("ReadFile", {"path": "lib/b.py"}, "r2")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "look at lib", "--no-pack"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    third = server.requests[2]["messages"]
    notes = [m["content"] for m in third if m["role"] == "user" and NESTED_NOTE in str(m["content"])]
    assert len(notes) == 1 and "LIB: use tabs." in notes[0] and 'source="lib/AGENTS.md"' in notes[0]
    assert "LIB: use tabs." not in server.requests[0]["messages"][0]["content"]  # the prefix did not change
    assert server.requests[2]["messages"][0] == server.requests[0]["messages"][0]
