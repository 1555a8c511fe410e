"""Skills: SKILL.md folders; only names and descriptions go into the prompt (in the cached prefix, sorted);
the model reads a skill's body with ReadFile when it uses it, a user's skill folder included, and nothing
else outside the workspace."""

from __future__ import annotations

from pathlib import Path

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results

PDF = """---
name: pdf-tables
description: Extract tables from PDF files into CSV. Use when the user gives a PDF.
---
# PDF tables

Run `python3 scripts/extract.py FILE` and check the row counts. SECRET-BODY-MARKER
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_prompt_lists_skills_sorted_and_the_model_reads_a_user_skill_on_demand(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    write(home / ".kimi/skills/pdf/SKILL.md", PDF)
    write(home / ".kimi/skills/pdf/reference.md", "column rules")
    write(
        repo / ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write changelog entries\n---\nbody",
    )
    write(tmp_path / "outside.txt", "OUTSIDE-SECRET")
    (home / ".kimi/skills/pdf/escape.md").symlink_to(tmp_path / "outside.txt")
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "~/.kimi/skills/pdf/SKILL.md"}, "r1"),
                        tool_call("ReadFile", {"path": "~/.kimi/skills/pdf/reference.md"}, "r2"),
                        tool_call("ReadFile", {"path": "~/.kimi/config.toml"}, "r3"),
                        tool_call("ReadFile", {"path": "~/.kimi/skills/pdf/../../config.toml"}, "r4"),
                        tool_call("ReadFile", {"path": "~/.kimi/skills/pdf/escape.md"}, "r5")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "turn report.pdf into csv"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    system = server.requests[0]["messages"][0]["content"]
    listing = system[system.index("Skills:") :]
    assert listing.index("- changelog: Write changelog entries") < listing.index("- pdf-tables: Extract tables")
    assert "(read ~/.kimi/skills/pdf/SKILL.md)" in listing and "(read .claude/skills/changelog/SKILL.md)" in listing
    assert "SECRET-BODY-MARKER" not in system  # the body waits until the model reads it
    body, ref, config, dotdot, link = tool_results(server, 1)
    assert "SECRET-BODY-MARKER" in body and "column rules" in ref
    assert "outside the workspace" in config and "base_delay" not in config
    assert "base_delay" not in dotdot and "OUTSIDE-SECRET" not in link


def test_a_project_skill_is_a_workspace_file(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    write(repo / ".kimi/skills/release/SKILL.md", "---\nname: release\ndescription: Cut a release\n---\nTag it.")
    server.add({"tool_calls": [tool_call("ReadFile", {"path": ".kimi/skills/release/SKILL.md"}, "r")]}, {"text": "ok"})
    proc = run_kimi(["-p", "cut a release"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "Tag it." in tool_results(server, 1)[0]
    assert (
        "- release: Cut a release (read .kimi/skills/release/SKILL.md)" in server.requests[0]["messages"][0]["content"]
    )


def test_kimi_prompt_shows_the_same_skills_section(repo: Path, env: dict) -> None:
    write(repo / ".kimi/skills/release/SKILL.md", "---\nname: release\ndescription: Cut a release\n---\nTag it.")
    proc = run_kimi(["prompt"], repo, env)
    assert proc.returncode == 0, proc.stderr
    assert "- release: Cut a release (read .kimi/skills/release/SKILL.md)" in proc.stdout
