"""What a session changed: the -p result's files_changed, `--patch FILE` (git apply takes it on a clean clone)
and `kimi diff [SESSION]` (the latest by default; byte for byte in a pipe, quiet into a closed pipe)."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import jsonschema

from scripted_server import ScriptedModelServer
from support import git, kimi_executable, run_kimi, tool_call

FIX = {"path": "calc.py", "edit": {"old": "return a - b", "new": "total = a + b\n    return total"}}
OPS = {"path": "pkg/ops.py", "content": "def plus(a, b):\n    return a + b\n\n\nONE = 1\n"}
SCHEMA = json.loads(resources.files("kimi_cli.frontends.headless").joinpath("headless.schema.json").read_text())


def result_of(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def changing_run(repo: Path, env: dict, server: ScriptedModelServer, *extra: str) -> dict:
    server.add(
        {
            "tool_calls": [
                tool_call("StrReplaceFile", FIX, "e1"),
                tool_call("WriteFile", OPS, "w1"),
                tool_call("Shell", {"command": "rm README.md"}, "s1"),
            ]
        },
        {"text": "Done."},
    )
    proc = run_kimi(["-p", "fix add", "--yolo", "--no-pack", "--output-format", "json", *extra], repo, env, server)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return result_of(proc)


def test_the_result_lists_the_changed_files_and_the_patch_applies_to_a_clean_clone(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    patch = tmp_path / "change.patch"
    result = changing_run(repo, env, server, "--patch", str(patch))
    jsonschema.validate(result, SCHEMA)
    assert sorted(result["files_changed"], key=lambda f: f["path"]) == [
        {"path": "README.md", "status": "deleted", "added": 0, "removed": 1},
        {"path": "calc.py", "status": "modified", "added": 2, "removed": 1},
        {"path": "pkg/ops.py", "status": "added", "added": 5, "removed": 0},
    ]
    assert result["patch"] == {"path": str(patch), "bytes": patch.stat().st_size, "error": None}
    applied = subprocess.run(["git", "apply", "--index", str(patch)], cwd=clone, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    for name in ("calc.py", "pkg/ops.py"):
        assert (clone / name).read_bytes() == (repo / name).read_bytes()
    assert not (clone / "README.md").exists()
    # kimi diff prints the same patch, byte for byte, in a pipe (the latest session by default, or by id)
    latest = subprocess.run([*kimi_executable(), "diff"], cwd=repo, env=env, capture_output=True)
    assert latest.returncode == 0 and latest.stdout == patch.read_bytes(), latest.stderr
    by_id = subprocess.run(
        [*kimi_executable(), "diff", result["session_id"][:12]], cwd=repo, env=env, capture_output=True
    )
    assert by_id.stdout == patch.read_bytes(), by_id.stderr
    stat = run_kimi(["diff", "--stat"], repo, env)
    assert stat.returncode == 0 and [line.split() for line in stat.stdout.splitlines()] == [
        ["deleted", "+0", "-1", "README.md"],
        ["modified", "+2", "-1", "calc.py"],
        ["added", "+5", "-0", "pkg/ops.py"],
    ]


def test_an_earlier_session_and_a_session_that_changed_nothing(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    first = changing_run(repo, env, server)
    server.add({"text": "Nothing to change."})
    patch = tmp_path / "none.patch"
    proc = run_kimi(["-p", "look only", "--output-format", "json", "--patch", str(patch)], repo, env, server)
    second = result_of(proc)
    assert proc.returncode == 0 and second["files_changed"] == [] and patch.read_bytes() == b""
    assert second["patch"]["bytes"] == 0
    latest = run_kimi(["diff"], repo, env)
    assert latest.returncode == 0 and latest.stdout == "" and "changed no file" in latest.stderr
    earlier = run_kimi(["diff", first["session_id"]], repo, env)
    assert earlier.returncode == 0 and "+    total = a + b" in earlier.stdout
    missing = run_kimi(["diff", "no-such-session"], repo, env)
    assert missing.returncode == 2 and "no-such-session" in missing.stderr


def test_kimi_diff_into_a_closed_pipe_ends_quietly(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    big = {"path": "big.txt", "content": "".join(f"line {i}\n" for i in range(200_000))}
    server.add({"tool_calls": [tool_call("WriteFile", big, "w1")]}, {"text": "Done."})
    assert run_kimi(["-p", "write", "--yolo", "--no-pack"], repo, env, server, timeout=120).returncode == 0
    piped = subprocess.run(
        ["bash", "-c", f"{' '.join(kimi_executable())} diff | head -1; echo \"${{PIPESTATUS[0]}}\""],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert piped.stdout.splitlines()[0] == "diff --git a/big.txt b/big.txt"
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
    assert piped.stdout.splitlines()[-1] in ("0", "1")  # 1: the reader went away first (util.pipes)


def test_patch_with_attempts_is_a_usage_error(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    proc = run_kimi(["-p", "x", "--attempts", "2", "--check", "true", "--patch", "x.patch"], repo, env, server)
    assert proc.returncode == 2 and "--patch needs a headless run of one attempt" in proc.stderr
    assert server.requests == [] and not (repo / "x.patch").exists()
