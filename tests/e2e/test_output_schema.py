"""`kimi -p --output-schema FILE`: the final answer must be JSON valid against the schema; one retry with the
validation errors, then exit 1 with them; the result object carries the parsed value."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import jsonschema

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, kimi_executable, run_kimi

SCHEMA = {
    "type": "object",
    "properties": {"files": {"type": "integer"}, "names": {"type": "array", "items": {"type": "string"}}},
    "required": ["files", "names"],
    "additionalProperties": False,
}


def schema_file(tmp_path: Path, schema: object = SCHEMA) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return path


def test_the_model_sees_the_schema_and_a_valid_answer_is_the_structured_output(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": '```json\n{"files": 2, "names": ["calc.py", "README.md"]}\n```'})
    args = ["-p", "list the files", "--output-schema", str(schema_file(tmp_path)), "--output-format", "json"]
    proc = run_kimi(args, repo, env, server)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structured_output"] == {"files": 2, "names": ["calc.py", "README.md"]}
    headless = json.loads((ROOT_DIR / "kimi_cli/frontends/headless/headless.schema.json").read_text())
    jsonschema.validate(result, headless)  # the documented result shape, structured_output included
    task = server.requests[0]["messages"][-1]["content"]
    assert task.startswith("list the files") and '"additionalProperties": false' in task


def test_a_mismatch_gets_the_errors_and_one_more_try(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": "There are two files: calc.py and README.md."}, {"text": '{"files": 2, "names": ["calc.py"]}'})
    args = ["-p", "list", "--output-schema", str(schema_file(tmp_path)), "--output-format", "json"]
    proc = run_kimi(args, repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structured_output"] == {"files": 2, "names": ["calc.py"]}
    retry = server.requests[1]["messages"][-1]["content"]
    assert "does not validate" in retry and "not JSON" in retry


def test_a_second_mismatch_exits_1_with_the_errors(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": '{"files": "two", "names": []}'}, {"text": '{"files": "two", "names": [], "extra": 1}'})
    args = ["-p", "list", "--output-schema", str(schema_file(tmp_path)), "--output-format", "json"]
    proc = run_kimi(args, repo, env, server)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["reason"] == "schema_mismatch" and result["structured_output"] is None
    assert "at $.files: 'two' is not of type 'integer'" in result["message"]
    assert "Additional properties are not allowed" in result["message"]
    assert "at $.files" in server.requests[1]["messages"][-1]["content"] and len(server.requests) == 2


def test_a_broken_schema_is_a_usage_error_before_any_request(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    proc = run_kimi(["-p", "x", "--output-schema", str(schema_file(tmp_path, {"type": 12}))], repo, env, server)
    assert proc.returncode == 2 and "not a valid JSON Schema" in proc.stderr and not server.requests
    proc = run_kimi(["-p", "x", "--output-schema", str(tmp_path / "missing.json")], repo, env, server)
    assert proc.returncode == 2 and "cannot read it" in proc.stderr


def test_text_mode_prints_exactly_the_validated_json_for_a_pipe(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    """`kimi -p ... --output-schema s.json | python3 -m json.tool` succeeds: stdout is the value alone, without
    the model's fence or prose, whatever the answer wrapped it in."""
    server.add({"text": 'Here it is:\n```json\n{"files": 2, "names": ["calc.py", "README.md"]}\n```'})
    kimi = " ".join(shlex.quote(part) for part in kimi_executable())
    line = (
        f"{kimi} -p 'list the files' --output-schema {shlex.quote(str(schema_file(tmp_path)))} | python3 -m json.tool"
    )
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=repo, env=full, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"files": 2, "names": ["calc.py", "README.md"]}
    server.add({"text": '```json\n{"files": 1, "names": ["é\\u202e"]}\n```'})
    plain = run_kimi(["-p", "list", "--output-schema", str(schema_file(tmp_path))], repo, env, server)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == '{"files": 1, "names": ["é\\u202e"]}\n'  # one line, exact JSON, inert on a terminal


def test_text_mode_prints_nothing_on_stdout_when_the_answer_never_validates(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": "two files"}, {"text": '{"files": "two", "names": []}'})
    proc = run_kimi(["-p", "list", "--output-schema", str(schema_file(tmp_path))], repo, env, server)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "schema_mismatch" in proc.stderr and "at $.files" in proc.stderr
