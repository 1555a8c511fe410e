"""A base URL can carry a credential (https://user:TOKEN@proxy.example/v1, a gateway's ?api_key=): kimi -p's
error (stderr, the JSON result, stream-json's result event) and kimi doctor (text and JSON) named the URL as
written, password and all, into CI logs. They now name it with the secret hidden and everything else kept
(scheme, user, host, port, path), so the message still says where; beside a URL without a secret, named as
written. Nothing here is written to the session folder either (sessions, logs), nor to endpoints.json, where an
entry an older kimi keyed by the whole URL is dropped at the next read."""

from __future__ import annotations

import json
import time
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
    """Sessions, logs and endpoints.json (which keys its learned windows by the URL without its user info)."""
    out = []
    for path in (home / ".kimi").rglob("*"):
        if path.is_file():
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


def test_an_old_endpoints_entry_keyed_with_a_password_is_dropped_and_the_others_kept(
    tmp_path: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add({"text": "hi"})
    cache = home / ".kimi" / "endpoints.json"
    kept = f"{server.base_url} other-model"
    old = {f"{url_of(server, True, secret=True)} kimi-k3.1-pro": {"context_length": 1, "checked": time.time()},
           kept: {"context_length": 4096, "source": "the server", "checked": time.time()}}  # fmt: skip
    cache.write_text(json.dumps(old))
    proc = run_kimi(["-p", "hi"], tmp_path, env, server, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert PASSWORD not in cache.read_text()
    assert kept in json.loads(cache.read_text())
