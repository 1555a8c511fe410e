"""A base URL can carry a credential (https://user:TOKEN@proxy.example/v1, a gateway's ?api_key=): kimi -p's
error (stderr, the JSON result, stream-json's result event) and kimi doctor (text and JSON) named the URL as
written, password and all, into CI logs. They now name it with the secret hidden and everything else kept
(scheme, user, host, port, path), so the message still says where; beside a URL without a secret, named as
written. Nothing here is written to the session folder either (sessions, logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import run_kimi

PASSWORD = "s3cr3tPassw0rdXYZ987"
COMMANDS = {
    "doctor": ["doctor"],
    "doctor-json": ["doctor", "--json"],
    "p-text": ["-p", "hi"],
    "p-json": ["-p", "hi", "--output-format", "json"],
    "p-stream": ["-p", "hi", "--output-format", "stream-json"],
}


def url_of(server: ScriptedModelServer, live: bool, secret: bool) -> str:
    base = server.base_url if live else "http://127.0.0.1:9/v1"  # port 9: nothing listens (refused)
    return base.replace("http://", f"http://alice:{PASSWORD}@") if secret else base


def everything_written(home: Path) -> str:
    """Sessions and logs (endpoints.json keys its learned windows by the URL, as the user's config holds it)."""
    out = []
    for path in (home / ".kimi").rglob("*"):
        if path.is_file() and path.name != "endpoints.json":
            out.append(path.read_text(errors="replace"))
    return "\n".join(out)


@pytest.mark.parametrize("live", [False, True], ids=["refused", "401"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_password_in_the_base_url_is_never_printed(
    command: str, live: bool, tmp_path: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add(*[{"error": 401}] * 5)
    url = url_of(server, live, secret=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_kimi(COMMANDS[command], ws, {**env, "KIMI_BASE_URL": url}, server, timeout=90)
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0 or command.startswith("doctor"), shown[-2000:]
    assert PASSWORD not in shown, shown[-2000:]
    assert PASSWORD not in everything_written(home)
    host = url.split("@", 1)[1].split("/", 1)[0]
    assert f"alice:[hidden]@{host}" in shown, shown[-2000:]  # still says where


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_base_url_without_a_secret_is_named_as_written(
    command: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    url = url_of(server, live=False, secret=False)
    proc = run_kimi(COMMANDS[command], tmp_path, {**env, "KIMI_BASE_URL": url}, server, timeout=90)
    assert "http://127.0.0.1:9/v1" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    assert "[hidden]" not in proc.stdout + proc.stderr
