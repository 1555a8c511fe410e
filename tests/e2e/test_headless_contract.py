"""The headless contract (docs/headless.md), validated with jsonschema against the schema file the
package ships (kimi_cli/frontends/headless/headless.schema.json): `json` prints exactly one object on stdout whatever
happens, `stream-json` opens with `init` and ends with the same `result`, retries are told on stderr."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from scripted_server import ScriptedModelServer
from support import free_port, run_kimi, tool_call

SCHEMA = json.loads(resources.files("kimi_cli.frontends.headless").joinpath("headless.schema.json").read_text())


def validate(obj: dict[str, Any], kind: str | None = None) -> None:
    jsonschema.validate(obj, SCHEMA)
    if kind is not None:  # and as that kind in particular
        jsonschema.validate(obj, {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{kind}"})


def one_object(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


def test_the_schema_itself_is_valid_and_rejects_a_result_without_cost() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        validate({"type": "result", "reason": "done", "exit_code": 0}, "result")


def test_json_result_carries_cost_cached_and_uncached_tokens_and_timing(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")],
         "usage": {"prompt_tokens": 5000, "completion_tokens": 20, "cached_tokens": 0}},
        {"text": "done", "usage": {"prompt_tokens": 5100, "completion_tokens": 30, "cached_tokens": 5000}},
    )  # fmt: skip
    k31 = {**env, "KIMI_MODEL": "kimi-k3.1-pro"}
    proc = run_kimi(["-p", "read calc.py", "--output-format", "json"], repo, k31, server)
    assert proc.returncode == 0, proc.stderr
    result = one_object(proc.stdout)
    validate(result, "result")
    assert result["reason"] == "done" and result["is_error"] is False and result["error"] is None
    assert result["tokens"] == {"input_uncached": 5100, "input_cached": 5000, "output": 50}
    assert result["cost"]["priced"] is True and result["cost"]["total_usd"] == pytest.approx(
        (5100 * 2.0 + 5000 * 0.2 + 50 * 10.0) / 1e6
    )
    assert result["timing"]["wall_s"] >= result["timing"]["model_s"] > 0
    assert result["session_id"] and result["steps"] == 2


def test_an_unknown_model_has_no_price_and_says_so(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "ok"})
    unknown = {**env, "KIMI_MODEL": "kimi-test"}  # what the scripted server serves; not in the model table
    result = one_object(run_kimi(["-p", "hi", "--output-format", "json"], repo, unknown, server).stdout)
    validate(result, "result")
    assert result["cost"]["priced"] is False and result["cost"]["total_usd"] == 0
    assert "no price" in result["cost"]["rates_source"]


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_an_error_before_the_session_is_still_one_json_object(repo: Path, env: dict, fmt: str) -> None:
    proc = run_kimi(["-p", "hi", "--output-format", fmt], repo, env)  # no key, no server: a config error
    assert proc.returncode == 2
    result = one_object(proc.stdout)
    validate(result, "result")
    assert result["is_error"] is True and result["exit_code"] == 2 and result["session_id"] is None
    assert result["error"]["type"] == "config" and "kimi login" in result["message"]
    assert "kimi login" in proc.stderr  # and the words on stderr, as in text mode


def test_a_bad_flag_in_json_mode_is_one_json_object_too(repo: Path, env: dict) -> None:
    for argv in (["-p", "hi", "--output-format", "json", "--effort", "huge"],
                 ["-p", "hi", "--output-format", "json", "--no-such-flag"]):  # fmt: skip
        proc = run_kimi(argv, repo, env)
        assert proc.returncode == 2, proc.stderr
        result = one_object(proc.stdout)
        validate(result, "result")
        assert result["reason"] == "usage_error" and result["error"]["type"] == "usage"


def test_an_error_during_the_run_names_the_session(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"error": 401})
    proc = run_kimi(["-p", "go", "--output-format", "json"], repo, env, server)
    result = one_object(proc.stdout)
    validate(result, "result")
    assert result["is_error"] and result["exit_code"] == proc.returncode != 0
    assert result["session_id"] and result["steps"] >= 1


def test_stream_json_opens_with_init_and_ends_with_the_same_result_as_json(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    script = [{"reasoning": "hmm", "tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]},
              {"text": "it subtracts"}]  # fmt: skip
    server.add(*script)
    proc = run_kimi(["-p", "what does add do?", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        validate(event)
    init, result = events[0], events[-1]
    validate(init, "init")
    validate(result, "result")
    assert init["type"] == "init" and result["type"] == "result"
    assert init["session_id"] == result["session_id"]
    assert "ReadFile" in init["tools"] and init["pack"]["tokens"] > 0 and init["model"] == "kimi-k3.1-pro"
    assert [e["type"] for e in events].count("result") == 1 and "finished" not in [e["type"] for e in events]
    server.add(*script)
    plain = one_object(run_kimi(["-p", "what does add do?", "--output-format", "json"], repo, env, server).stdout)
    assert set(plain) == set(result)  # the same object, field for field
    assert (plain["reason"], plain["text"], plain["steps"]) == (result["reason"], result["text"], result["steps"])


def test_a_wrong_local_port_is_told_on_stderr_once_per_retry_and_gives_up_soon(repo: Path, env: dict) -> None:
    port = free_port()  # nothing listens there
    started = time.monotonic()
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo,
                    {**env, "KIMI_BASE_URL": f"http://127.0.0.1:{port}/v1", "KIMI_PROVIDER": "openai"})  # fmt: skip
    elapsed = time.monotonic() - started
    assert proc.returncode == 5
    retries = [line for line in proc.stderr.splitlines() if line.startswith("kimi: retry ")]
    assert len(retries) == 3 and all("refused" in line for line in retries)
    result = one_object(proc.stdout)
    validate(result, "result")
    assert result["error"]["type"] == "provider_unavailable" and "is the server running" in result["message"]
    assert elapsed < 30  # generous: the old budget was 43 s of silence; it is ~4 s now (bench/ for timings)


def test_json_result_names_what_the_sandbox_removed_from_a_repository_a_command_made(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    """`git_settings_removed`: always a list; each item names the repository, the setting and its value."""
    root = tmp_path / "plain"
    root.mkdir()
    plant = "git init -q && git config core.fsmonitor 'touch X' && echo ok"
    server.add({"tool_calls": [tool_call("Shell", {"command": plant}, "p")]}, {"text": "done"})
    proc = run_kimi(["-p", "go", "--output-format", "json"], root, env, server)
    assert proc.returncode == 0, proc.stderr
    result = one_object(proc.stdout)
    validate(result, "result")
    assert result["git_settings_removed"] == [{"repository": ".git", "setting": "core.fsmonitor", "value": "touch X"}]
    with pytest.raises(jsonschema.ValidationError):
        validate({**result, "git_settings_removed": [{"repository": ".git"}]}, "result")


def test_check_and_attempts_results_match_the_schema(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    """`check` (--check) on a single run, and `attempts`/`chosen`/`merged` (--attempts N), as the schema says."""
    server.add({"match": "once", "text": "nothing to do"})
    proc = run_kimi(["-p", "once", "--check", "test -f calc.py", "--output-format", "json"], repo, env, server)
    single = one_object(proc.stdout)
    validate(single, "result")
    assert single["check"] == {"command": "test -f calc.py", "exit_code": 0, "passed": True, "output_tail": ""}
    for k in (1, 2):
        server.add({"match": f"attempt {k} of 2", "text": "nothing to do"})
    args = ["-p", "twice", "--attempts", "2", "--check", "test -f calc.py", "--output-format", "json"]
    proc = run_kimi(args, repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = one_object(proc.stdout)
    validate(result, "result")
    assert len(result["attempts"]) == 2 and result["chosen"] == 1
    with pytest.raises(jsonschema.ValidationError):
        validate({**result, "attempts": [{"index": 1}]}, "result")
