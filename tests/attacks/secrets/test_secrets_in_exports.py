"""A session export is made to be shared, and its log holds whatever tools printed: a token a command echoed,
the API key in a file the model read, a URL with a password. Each is hidden in every format (Markdown, JSON,
HTML) by the one redactor that also guards the logs and MCP; the rest of the session reads as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, result_json, run_kimi, tool_call

TOKEN = "ghp_" + "Q7wE9rT1yU3iO5pA7sD9fG1hJ3kL5zX7cV9b"  # a GitHub token's shape
PASSWORD = "hunter2-canary-pw"
URL_PASSWORD = "s3cr3t-url-pass"


def leaky_session(repo: Path, env: dict, server: ScriptedModelServer) -> str:
    (repo / "deploy.env").write_text(f"DEPLOY_KEY={TEST_KEY}\nREGION=eu-west-1\n")
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "deploy.env"}, "r1")]},
        {"tool_calls": [tool_call("Shell", {"command": f"echo token {TOKEN}; echo 'password: {PASSWORD}'"}, "s1")]},
        {"text": f"Pushed with https://deploy:{URL_PASSWORD}@git.example.com/app.git and the key in deploy.env. "
                 "REGION stays eu-west-1."},
    )  # fmt: skip
    proc = run_kimi(["-p", "deploy the app", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    return str(result_json(proc)["session_id"])


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_a_secret_in_tool_output_is_hidden_in_every_format(
    fmt: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    session_id = leaky_session(repo, env, server)
    exported = run_kimi(["export", session_id, "--format", fmt], repo, {**env, "KIMI_API_KEY": TEST_KEY})
    assert exported.returncode == 0, exported.stderr
    text = exported.stdout
    for secret in (TEST_KEY, TOKEN, PASSWORD, URL_PASSWORD):
        assert secret not in text, (fmt, secret)
    assert "[REDACTED]" in text or "[hidden]" in text
    # The legitimate session is all there: what was read, run and answered, minus the secrets.
    assert "REGION=eu-west-1" in text and "git.example.com/app.git" in text and "echo token" in text
    if fmt == "json":
        data = json.loads(text)
        calls = [c for t in data["turns"] for s in t["steps"] for c in s["calls"]]
        assert [c["name"] for c in calls] == ["ReadFile", "Shell"]


def test_the_session_log_itself_still_holds_what_was_printed(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """The redaction is the export's: the private log (0600) keeps the exact output, so resume is unchanged."""
    session_id = leaky_session(repo, env, server)
    log = next((Path(env["HOME"]) / ".kimi" / "sessions").glob(f"*/{session_id}/context.jsonl"))
    assert TOKEN in log.read_text() and log.stat().st_mode & 0o777 == 0o600
