"""Every `error.type` the headless schema lists (kimi_cli/frontends/headless/headless.schema.json) is one a real
`kimi -p --output-format json` run ends with, and each run's result validates: a script can branch on the
type (a refused key is `auth`, a wrong URL or model `config`, in the run as before it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, free_port, kimi_executable, run_kimi, tool_call, wait_until

SCHEMA = json.loads(resources.files("kimi_cli.frontends.headless").joinpath("headless.schema.json").read_text())
LISTED = SCHEMA["$defs"]["result"]["properties"]["error"]["oneOf"][1]["properties"]["type"]["enum"]
SHAPE = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
Case = Callable[[Path, dict, ScriptedModelServer, Path], subprocess.CompletedProcess[str]]


def _json(args: list[str], repo: Path, env: dict, server: ScriptedModelServer | None = None):
    return run_kimi([*args, "--output-format", "json"], repo, env, server)


def usage(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    return _json(["-p", "hi", "--effort", "huge"], repo, env)


def config(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"error": 404})
    return _json(["-p", "go"], repo, env, server)  # a wrong URL or model, found at the second request


def auth(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"error": 401})
    return _json(["-p", "go"], repo, env, server)


def budget(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"text": "late"})
    return _json(["-p", "go", "--max-steps", "1"], repo, env, server)


def loop_detected(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add(*[{"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, f"r{i}")]} for i in range(12)])
    return _json(["-p", "loop"], repo, env, server)


def cancelled(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add({"hang": 30, "text": "never"})
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    argv = [*kimi_executable(), "-p", "go", "--output-format", "json"]
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, cwd=repo, env=full, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, text=True)
    wait_until(lambda: server.requests or proc.poll() is not None, timeout=90, what="the first request")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def provider_unavailable(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    nothing = {**env, "KIMI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "KIMI_PROVIDER": "openai"}
    return _json(["-p", "hi"], repo, nothing)


def error(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    too_long = {"error": 400, "body": {"error": {"message": "This model's maximum context length is 2048 tokens"}}}
    server.add(*[too_long] * 8)  # still too long after compaction: none of the typed causes
    return _json(["-p", "go"], repo, env, server)


def schema_mismatch(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    (tmp / "s.json").write_text(json.dumps(SHAPE))
    server.add({"text": "three"}, {"text": '{"n": "three"}'})
    return _json(["-p", "count", "--output-schema", str(tmp / "s.json")], repo, env, server)


def blocked(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    hook = tmp / "refuse.sh"
    hook.write_text("#!/bin/sh\ncat > /dev/null\necho 'not today' >&2\nexit 2\n")
    hook.chmod(0o755)
    user = Path(env["HOME"]) / ".kimi" / "config.toml"
    user.write_text(user.read_text() + f'[[hooks.UserPromptSubmit]]\ncommand = "{hook}"\n')
    return _json(["-p", "go"], repo, env, server)


def visual_target_missed(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    import shutil

    if not shutil.which("chromium"):
        pytest.skip("needs headless Chromium (.ci/run installs the chromium package)")
    from PIL import Image

    Image.new("RGB", (400, 300), "#1e90ff").save(repo / "shot.png")
    red = '<html><body style="margin:0;background:#ff0000"></body></html>'
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "index.html", "content": red}, "w1")]},
               {"text": "Done."}, {"text": "It cannot get closer."})  # fmt: skip
    args = ["-p", "make index.html match shot.png", "--image", "shot.png", "--visual-check", "index.html",
            "--visual-target", "0.99"]  # fmt: skip
    return run_kimi([*args, "--output-format", "json"], repo, env, server, timeout=240)


def check_failed(repo: Path, env: dict, server: ScriptedModelServer, tmp: Path):
    server.add({"text": "Tests pass."})  # the model's word; the check says otherwise
    return _json(["-p", "fix it", "--check", "test -f no-such-file"], repo, env, server)


CASES: dict[str, tuple[Case, int]] = {
    "usage": (usage, 2),
    "config": (config, 2),
    "auth": (auth, 2),
    "budget": (budget, 3),
    "loop_detected": (loop_detected, 1),
    "cancelled": (cancelled, 4),
    "provider_unavailable": (provider_unavailable, 5),
    "error": (error, 1),
    "schema_mismatch": (schema_mismatch, 1),
    "blocked": (blocked, 4),
    "visual_target_missed": (visual_target_missed, 1),
    "check_failed": (check_failed, 1),
}


def test_the_schema_lists_every_error_type_the_code_gives_and_each_has_a_run() -> None:
    from kimi_cli.frontends.headless.app import ERROR_TYPE_NAMES

    assert sorted(LISTED) == sorted(ERROR_TYPE_NAMES) == sorted(CASES)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", list(CASES))
def test_a_real_run_ends_with_each_error_type(
    kind: str, repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    case, code = CASES[kind]
    proc = case(repo, env, server, tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    result: dict[str, Any] = json.loads(lines[0])
    jsonschema.validate(result, SCHEMA)
    assert result["error"]["type"] == kind, (result, proc.stderr)
    assert proc.returncode == result["exit_code"] == code and result["is_error"] is True
    assert "Traceback" not in proc.stderr


def test_a_refused_key_during_the_run_is_auth_and_a_wrong_url_is_config(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """Both stop at once (no retry), exit 2, reason error, with words a person can act on."""
    for status, kind, words in ((403, "auth", "refused the API key"), (404, "config", "answered 404"),
                                (400, "config", "rejected the request")):  # fmt: skip
        server.add({"error": status})
        started = time.monotonic()
        proc = _json(["-p", "go"], repo, env, server)
        result = json.loads(proc.stdout)
        assert (result["reason"], result["exit_code"], result["error"]["type"]) == ("error", 2, kind), result
        assert words in result["message"] and TEST_KEY not in proc.stdout + proc.stderr
        assert time.monotonic() - started < 30 and sys.executable
