"""kimi's API key reaches no program kimi starts, whichever provider's variable it was read from.

The variables kimi reads its key from were listed in config.py's provider table (OPENAI_API_KEY for
`--provider openai`), but the launchers of host programs each typed out their own copy with only KIMI_API_KEY
and MOONSHOT_API_KEY: with `--provider openai`, the key reached the user's stdio MCP servers and the git hooks
that `[git] allow_hooks` runs, and `env_allow = ["*_API_KEY"]` passed it into sandboxed commands. Now the
names live in one module (kimi_cli/hostsafe/secrets.py) and every launcher derives them from it. Beside the
attack: each program still gets what was named for it (an MCP server's own `env`, which may pass the key on
by name; a hook's project folder; the commit identity of `[git]`), and the user's other variables.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.config import Config, resolve_endpoint
from kimi_cli.hostsafe.secrets import ALL_KEY_VARIABLES, KEY_VARIABLES
from kimi_cli.sandbox.env import sandbox_env

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TESTS_DIR, git, run_kimi, tool_call, tool_results

OPENAI_KEY = "sk-openai-only-SECRET-7f3a9c"
SOURCES = ("kimi_cli", "tools", "engine")
TEXT = (".py", ".txt", ".toml", ".json", ".md", ".sh")


def test_the_key_variables_are_named_in_one_module() -> None:
    """grep over the package: the names stand only in the table (config, launchers, messages derive them)."""
    found: dict[str, list[str]] = {}
    for top in SOURCES:
        for path in sorted((ROOT_DIR / top).rglob("*")):
            if not path.is_file() or path.suffix not in TEXT or "__pycache__" in path.parts:
                continue
            if path.name == "README.md":  # prose for people: engine/README.md shows a run with the key set
                continue
            text = path.read_text(errors="replace")
            for name in ALL_KEY_VARIABLES:
                if name in text:
                    found.setdefault(name, []).append(str(path.relative_to(ROOT_DIR)))
    assert found == {name: ["kimi_cli/hostsafe/secrets.py"] for name in ALL_KEY_VARIABLES}


def test_each_provider_reads_its_key_from_its_own_variables() -> None:
    """The legitimate use of the table: the provider's variables, first found wins."""
    assert set(KEY_VARIABLES) == {"moonshot", "local", "openai"}
    for provider, names in KEY_VARIABLES.items():
        config = Config(provider=provider, base_url="http://127.0.0.1:9/v1")  # type: ignore[arg-type]
        for name in names:
            assert resolve_endpoint(config, {name: f"key-of-{name}"}).api_key == f"key-of-{name}"
        others = {n: "not-mine" for n in ALL_KEY_VARIABLES if n not in names}
        if provider != "moonshot":  # moonshot needs a key: none found is an error, checked elsewhere
            assert resolve_endpoint(config, others).api_key == "EMPTY"


def test_no_key_variable_passes_into_the_sandbox_even_when_allowed_by_pattern() -> None:
    environ = {name: "plainvalue" for name in ALL_KEY_VARIABLES} | {"MY_API_KEY": "plainvalue"}
    env, _ = sandbox_env(environ, allow=["*_API_KEY"])
    assert env.get("MY_API_KEY") == "plainvalue"  # the user's pattern still passes their own variable
    assert [name for name in ALL_KEY_VARIABLES if name in env] == []


def env_of(path: Path) -> dict[str, str]:
    """A dump of `env -0`: variable -> value."""
    items = [item.split("=", 1) for item in path.read_bytes().decode().split("\0") if "=" in item]
    return {name: value for name, value in items}


@pytest.mark.parametrize("backend", backends())
def test_kimi_p_with_the_openai_provider_gives_its_key_to_no_program_it_starts(
    backend: str, repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    fixture = [str(TESTS_DIR / "mcp_fixture_server.py"), "many", "1"]

    def dumping(name: str, extra: dict[str, str] | None = None) -> dict[str, object]:
        """A stdio MCP server that writes its environment, then serves one tool."""
        script = f'env -0 > {dumps / name}; exec "$0" "$@"'
        # On the host ("sandbox": false, the user's own file): what is tested is what a host program gets; a
        # sandboxed server gets no key variable at all (tests/attacks/mcp/test_sandboxed_mcp_server.py).
        server_config: dict[str, object] = {"command": "/bin/sh", "args": ["-c", script, sys.executable, *fixture],
                                            "sandbox": False}  # fmt: skip
        return server_config | ({"env": extra} if extra else {})

    servers = {
        "plain": dumping("mcp-plain"),
        "named": dumping("mcp-named", {"OPENAI_API_KEY": "${OPENAI_API_KEY}", "SERVER_SETTING": "for-this-server"}),
    }
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('[git]\nallow_hooks = true\nauthor_name = "Ann Author"\nauthor_email = "ann@example.com"\n')
        fh.write(f'[[hooks.SessionStart]]\ncommand = "env -0 > {dumps / "hook"}"\n')
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nenv -0 > {dumps / 'git-hook'}\n")
    hook.chmod(0o755)
    (repo / "notes.txt").write_text("notes\n")
    server.add(
        {"tool_calls": [tool_call("Git", {"command": "add", "paths": ["notes.txt"]}, "g1")]},
        {"tool_calls": [tool_call("Git", {"command": "commit", "message": "notes"}, "g2")]},
        {"tool_calls": [tool_call("Shell", {"command": "env"}, "s1")]},
        {"text": "done"},
    )
    run_env = {**env, "KIMI_BASE_URL": server.base_url, "OPENAI_API_KEY": OPENAI_KEY, "MY_SETTING": "kept"}
    args = ["-p", "commit the notes", "--provider", "openai", "--sandbox", backend]
    proc = run_kimi(args, repo, run_env, timeout=120)  # no server given: no KIMI_API_KEY set for it
    assert proc.returncode == 0, proc.stderr
    assert server.headers[0]["authorization"] == f"Bearer {OPENAI_KEY}"  # kimi itself did read it
    assert "committed" in tool_results(server, 2)[-1]

    seen = {name: env_of(dumps / name) for name in ("mcp-plain", "mcp-named", "hook", "git-hook")}
    for name, variables in seen.items():
        assert OPENAI_KEY not in json.dumps(variables) or name == "mcp-named", name
        assert variables.get("MY_SETTING") == "kept", name  # the user's other variables still come
    assert seen["mcp-named"]["OPENAI_API_KEY"] == OPENAI_KEY  # the user named it for this server
    assert seen["mcp-named"]["SERVER_SETTING"] == "for-this-server"
    assert "OPENAI_API_KEY" not in seen["mcp-plain"] and "SERVER_SETTING" not in seen["mcp-plain"]
    assert seen["hook"]["KIMI_PROJECT_DIR"] == str(repo.resolve())
    assert seen["git-hook"]["GIT_AUTHOR_NAME"] == "Ann Author"
    assert OPENAI_KEY not in tool_results(server, 3)[-1]  # the sandboxed `env`
    assert "Ann Author" in git(repo, "log", "-1", "--format=%an")
