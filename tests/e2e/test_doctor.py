"""`kimi doctor`: what a session here would use, checked for real (the scripted server's /models, the real
sandbox backends, MCP and language servers looked up, the folder's trust), each finding with its fix, in words
or as one JSON object; `kimi --version` prints the version alone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from sandbox_fixtures import backends

from kimi_cli import __version__

from scripted_server import ScriptedModelServer
from support import TEST_KEY, run_kimi

STATUSES = {"ok", "info", "warn", "error"}


def doctor(repo: Path, env: dict, server: ScriptedModelServer | None = None) -> tuple[dict[str, Any], str]:
    proc = run_kimi(["doctor", "--json"], repo, env, server)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["version"] == __version__ and proc.returncode == (0 if report["ok"] else 1)
    for finding in report["findings"]:
        assert set(finding) == {"check", "status", "detail", "fix"} and finding["status"] in STATUSES
        if finding["status"] in ("warn", "error"):
            assert finding["fix"], finding  # every problem comes with what to do about it
    return report, proc.stdout


def by_check(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in report["findings"]:
        out.setdefault(finding["check"], []).append(finding)
    return out


def test_a_working_setup_reports_each_part_and_exits_0(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    report, raw = doctor(repo, {**env, "KIMI_MODEL": "kimi-test"}, server)
    found = by_check(report)
    assert report["ok"] is True
    assert found["key"][0]["status"] == "ok" and "$KIMI_API_KEY" in found["key"][0]["detail"]
    assert TEST_KEY not in raw  # the key's source, never the key
    endpoint = found["endpoint"][0]
    assert endpoint["status"] == "ok" and server.base_url in endpoint["detail"] and "kimi-test" in endpoint["detail"]
    assert found["window"][0]["detail"].startswith("context 1,048,576 tokens (from the server")
    assert {"sandbox.landlock", "sandbox.docker", "sandbox"} <= set(found)
    if "bwrap" in backends():
        assert found["sandbox.bwrap"][0]["status"] == "ok" and "Enforces:" in found["sandbox.bwrap"][0]["detail"]
        assert found["sandbox"][0]["detail"].startswith("bwrap (")
    else:  # the non-root run's bwrap fails as on Ubuntu 24.04: said so, and the pick lands on landlock
        assert found["sandbox.bwrap"][0]["status"] != "ok"
        assert "landlock" in found["sandbox"][0]["detail"]
    assert found["mcp"][0]["status"] == "info" and "lsp" in found
    assert found["trust"][0]["status"] == "ok" and "config.toml" in found["config"][0]["detail"]


def test_a_base_url_with_user_info_is_checked_and_its_password_never_shown(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    # urllib refused http://user:pw@host/v1 as a bad port, so doctor said the endpoint was unreachable
    password = "doctor-url-pw-4711"
    url = server.base_url.replace("://", f"://proxyuser:{password}@", 1)
    server.required_key = TEST_KEY  # the key still goes as the Bearer token
    report, raw = doctor(repo, {**env, "KIMI_MODEL": "kimi-test", "KIMI_BASE_URL": url}, server)
    endpoint = by_check(report)["endpoint"][0]
    assert endpoint["status"] == "ok" and "lists the model" in endpoint["detail"], endpoint
    assert by_check(report)["window"][0]["detail"].startswith("context 1,048,576 tokens (from the server")
    assert report["ok"] is True and password not in raw
    learned = Path(env["HOME"]) / ".kimi" / "endpoints.json"
    assert learned.is_file() and password not in learned.read_text()  # the window cache keys by the bare URL
    proc = run_kimi(["doctor"], repo, {**env, "KIMI_MODEL": "kimi-test", "KIMI_BASE_URL": url}, server)
    assert "✓ endpoint: " in proc.stdout and password not in proc.stdout + proc.stderr
    url = "http://proxyuser:" + password + "@127.0.0.1:9/v1"  # unreachable: the problem names it, hidden
    report, raw = doctor(repo, {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": url})
    endpoint = by_check(report)["endpoint"][0]
    assert endpoint["status"] == "error" and "cannot reach" in endpoint["detail"] and password not in raw


def test_a_refused_key_and_a_missing_one_are_errors_with_their_fix(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.required_key = "sk-the-right-key-0123456789"
    report, _ = doctor(repo, env, server)  # run_kimi exports TEST_KEY: the wrong one
    key = by_check(report)["key"]
    assert report["ok"] is False and key[-1]["status"] == "error" and "refused" in key[-1]["detail"]
    assert "kimi login" in key[-1]["fix"]
    report, _ = doctor(repo, env)  # no key at all, Moonshot's API
    key = by_check(report)["key"][0]
    assert key["status"] == "error" and "kimi login" in key["fix"] and "KIMI_API_KEY" in key["fix"]


def test_an_unreachable_endpoint_says_how_to_fix_it(repo: Path, env: dict) -> None:
    report, _ = doctor(repo, {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": "http://127.0.0.1:9/v1"})
    endpoint = by_check(report)["endpoint"][0]
    assert endpoint["status"] == "error" and "base" in endpoint["fix"].lower()


def test_mcp_servers_and_an_untrusted_folder_are_reported(repo: Path, env: dict, home: Path) -> None:
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "gone": {"command": "no-such-mcp-server-here"},
        "here": {"command": "python3", "args": ["-c", "pass"]},
        "remote": {"url": "https://mcp.example.invalid/mcp"},
    }}))  # fmt: skip
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text("[sandbox]\nallow_network = true\n")  # widens: needs trust
    report, _ = doctor(repo, {**env, "KIMI_API_KEY": TEST_KEY})
    found = by_check(report)
    assert found["mcp.gone"][0]["status"] == "error" and "no-such-mcp-server-here" in found["mcp.gone"][0]["fix"]
    assert found["mcp.here"][0]["status"] == "ok" and found["mcp.remote"][0]["status"] == "info"
    trust = found["trust"][0]
    assert trust["status"] == "warn" and "sandbox.allow_network" in trust["detail"] and "kimi trust" in trust["fix"]
    assert str(repo / ".kimi" / "config.toml") in found["config"][0]["detail"]


def test_text_mode_prints_one_line_per_finding_with_its_fix(repo: Path, env: dict) -> None:
    proc = run_kimi(["doctor"], repo, env)  # no key: one error
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"kimi {__version__} · python ")
    key = next(i for i, line in enumerate(lines) if line.startswith("✗ key: "))
    assert lines[key + 1].startswith("    fix: run `kimi login`")
    if "bwrap" in backends():
        assert any(line.startswith("✓ sandbox.bwrap: works here") for line in lines)
    else:  # the non-root run's failing bwrap
        assert any("sandbox.bwrap: " in line and not line.startswith("✓") for line in lines)


def test_version_prints_the_version_alone(repo: Path, env: dict) -> None:
    proc = run_kimi(["--version"], repo, env)
    assert proc.returncode == 0 and proc.stdout == f"kimi {__version__}\n" and proc.stderr == ""
    code = "import sys; sys.argv = ['kimi', '--version']; from kimi_cli.entry import main; main(); print(sys.modules)"
    loaded = subprocess.run(["python3", "-c", code], capture_output=True, text=True, check=True).stdout
    assert "typer" not in loaded and "pydantic" not in loaded and "kimi_cli.config" not in loaded
