"""`kimi ci-repair` as a CI job runs it: the job's environment and service, a dirty tree, a scratch file, a
rerun on the same commit, a refused commit, and errors that still leave a result and a report."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from sandbox_fixtures import CountingServer, backends, sandbox_flags

from scripted_server import ScriptedModelServer
from support import free_port, git, run_kimi, tool_call

TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
FIX = {"path": "calc.py", "edit": {"old": "return a - b", "new": "return a + b"}}


@pytest.fixture
def red_repo(repo: Path) -> Path:
    """conftest's repo (calc.add subtracts) with a test that says so."""
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a test")
    return repo


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fixing_script(server: ScriptedModelServer, *extra: dict) -> None:
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", FIX, "e1"), *extra]},
        {"text": "Cause: add subtracted. Change: it adds."},
    )


# --- the job's environment: a variable and a loopback service ------------------------------------------------

SERVICE_TEST = """import os, socket, urllib.parse


def test_database_answers():
    url = urllib.parse.urlsplit(os.environ["DATABASE_URL"])
    socket.create_connection((url.hostname, url.port), timeout=5).close()
"""


@pytest.mark.timeout(240)
@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # docker: its own loopback
def test_pass_env_and_allow_network_reach_the_service_with_no_model_call(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, tmp_path: Path, backend: str
) -> None:
    (repo / "test_db.py").write_text(SERVICE_TEST)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a database test")
    service = CountingServer()
    try:
        # a URL with a password: the built-in allowlist would refuse its value, --pass-env passes it as it is
        job_env = {**env, "DATABASE_URL": f"postgres://app:s3cret@127.0.0.1:{service.port}/app"}
        command = f"{sys.executable} -m pytest -q -p no:cacheprovider test_db.py"
        flags = sandbox_flags(backend, home)
        report = tmp_path / "report.md"
        args = ["ci-repair", *flags, "--test", command, "--report", str(report), "--output-format", "json"]
        proc = run_kimi([*args, "--pass-env", "DATABASE_URL", "--allow-network"], repo, job_env, server, timeout=200)
        assert proc.returncode == 0, proc.stderr
        assert result_of(proc)["status"] == "already-green" and server.requests == []
        assert service.accepted >= 1 and "already pass" in report.read_text()
        assert "kimi: ci-repair: tests before: green" in proc.stderr  # progress on stderr in json mode
        # without the switches the same suite is red in the sandbox: the switches are what made it green
        server.add({"text": "I cannot reach the database."})
        proc = run_kimi([*args, "--max-attempts", "1"], repo, job_env, server, timeout=200)
        assert proc.returncode == 3, proc.stderr
        assert result_of(proc)["tests_before"]["exit_code"] not in (0, None)
    finally:
        service.close()


def test_pass_env_refuses_api_key_variables_and_patterns(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    for name in ("KIMI_API_KEY", "OPENAI_API_KEY", "LD_PRELOAD", "AWS_*", "A=B"):
        proc = run_kimi(["ci-repair", "--test", "true", "--pass-env", name], repo, env, server)
        assert proc.returncode == 2 and f"--pass-env {name}" in proc.stderr, proc.stderr
    assert server.requests == []


# --- clean commits ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_dirty_tree_and_scratch_file_stay_out_of_the_fix_commit(
    red_repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (red_repo / "README.md").write_text("# calc\n\nThe user's edit, not committed.\n")
    (red_repo / "notes.txt").write_text("the user's own untracked file\n")
    scratch = tool_call("WriteFile", {"path": "repro_debug.py", "content": "print(2 - 3)\n"}, "w1")
    fixing_script(server, scratch)
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", TEST_CMD, "--report", str(report), "--output-format", "json"]
    proc = run_kimi(args, red_repo, env, server, timeout=200)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert result["status"] == "fixed" and result["files_changed"] == ["calc.py"]
    assert result["left_out"] == ["repro_debug.py"]
    assert git(red_repo, "show", "--name-only", "--format=", "HEAD").split() == ["calc.py"]
    assert result["commit"] == git(red_repo, "rev-parse", "HEAD").strip()
    # the user's edit and file are back, as they were; the scratch file is listed and kept, untracked
    assert "The user's edit" in (red_repo / "README.md").read_text()
    assert (red_repo / "notes.txt").read_text() == "the user's own untracked file\n"
    status = git(red_repo, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M README.md", "?? notes.txt", "?? repro_debug.py"]
    assert "stashed your 2 uncommitted change(s)" in proc.stderr
    assert "`repro_debug.py`" in report.read_text().split("### Left out of the commit")[1]
    assert git(red_repo, "stash", "list").strip() == ""


@pytest.mark.timeout(240)
def test_a_new_file_the_fix_needs_is_committed(red_repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (red_repo / "calc.py").write_text("from ops import plus\n\n\ndef add(a, b):\n    return a - b\n")
    git(red_repo, "commit", "-q", "-am", "import ops")  # red: ops does not exist
    fix = {"path": "calc.py", "edit": {"old": "return a - b", "new": "return plus(a, b)"}}
    ops = {"path": "ops.py", "content": "def plus(a, b):\n    return a + b\n"}
    server.add(
        {"tool_calls": [tool_call("WriteFile", ops, "w1"), tool_call("StrReplaceFile", fix, "e1")]},
        {"text": "Added ops.plus."},
    )
    proc = run_kimi(["ci-repair", "--test", TEST_CMD, "--output-format", "json"], red_repo, env, server, timeout=200)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert result["status"] == "fixed" and result["files_changed"] == ["calc.py", "ops.py"]
    assert result["left_out"] == []
    assert sorted(git(red_repo, "show", "--name-only", "--format=", "HEAD").split()) == ["calc.py", "ops.py"]


# --- truthful status -------------------------------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_a_rerun_on_the_same_commit_gets_its_own_branch_and_its_own_outcome(
    red_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    head = git(red_repo, "rev-parse", "HEAD").strip()
    fixing_script(server)
    args = ["ci-repair", "--test", TEST_CMD, "--output-format", "json", "--max-attempts", "1"]
    first = run_kimi(args, red_repo, env, server, timeout=200)
    assert first.returncode == 0 and result_of(first)["branch"] == f"kimi/ci-repair-{head[:8]}", first.stderr
    git(red_repo, "switch", "-q", "main")
    broken = {"path": "calc.py", "edit": {"old": "no such text", "new": "x"}}
    server.add({"tool_calls": [tool_call("StrReplaceFile", broken, "e2")]}, {"text": "Fixed it, I think."})
    second = run_kimi(args, red_repo, env, server, timeout=200)
    result = result_of(second)
    assert second.returncode == 3, second.stderr
    assert result["status"] == "not-fixed" and result["branch"] == f"kimi/ci-repair-{head[:8]}-2"
    assert result["files_changed"] == [] and result["commit"] is None
    assert git(red_repo, "rev-parse", f"kimi/ci-repair-{head[:8]}-2").strip() == head
    taken = run_kimi([*args, "--branch", f"kimi/ci-repair-{head[:8]}"], red_repo, env, server, timeout=200)
    assert taken.returncode == 2 and "exists already" in taken.stderr
    assert result_of(taken)["status"] == "error"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("allow_hooks", [False, True])
def test_a_refused_commit_is_not_fixed(
    red_repo: Path, env: dict, home: Path, server: ScriptedModelServer, tmp_path: Path, allow_hooks: bool
) -> None:
    hook = red_repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'pre-commit: refused' >&2\nexit 1\n")
    os.chmod(hook, 0o755)
    if allow_hooks:  # the hook runs and refuses; without it, host git refuses to commit past a hook it won't run
        with (home / ".kimi" / "config.toml").open("a") as fh:
            fh.write("\n[git]\nallow_hooks = true\n")
    head = git(red_repo, "rev-parse", "HEAD").strip()
    fixing_script(server)
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", TEST_CMD, "--report", str(report), "--output-format", "json"]
    proc = run_kimi(args, red_repo, env, server, timeout=200)
    result = result_of(proc)
    assert proc.returncode == 6, proc.stderr
    assert result["status"] == "not-committed" and result["commit"] is None
    assert git(red_repo, "rev-parse", "HEAD").strip() == head
    assert "NOT committed" in report.read_text() and "Fix failing tests" not in git(red_repo, "log", "--format=%s")


# --- errors still leave a result and a report ----------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_401_leaves_a_json_result_and_a_report(
    red_repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"error": 401, "body": {"error": {"message": "invalid api key"}}})
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", TEST_CMD, "--report", str(report), "--output-format", "json"]
    proc = run_kimi(args, red_repo, env, server, timeout=100)
    assert proc.returncode == 2, proc.stderr
    result = result_of(proc)
    assert result["status"] == "error" and result["exit_code"] == 2 and result["error"]
    assert result["tests_before"]["exit_code"] == 1
    text = report.read_text()
    assert "## kimi ci-repair: error" in text and "Error:" in text


@pytest.mark.timeout(120)
def test_a_refused_connection_leaves_a_json_result_and_a_report(red_repo: Path, env: dict, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    job_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
               "KIMI_API_KEY": "sk-test"}  # fmt: skip
    args = ["ci-repair", "--test", TEST_CMD, "--report", str(report), "--output-format", "json"]
    proc = run_kimi(args, red_repo, job_env, None, timeout=100)
    result = result_of(proc)
    assert proc.returncode == 5 and result["exit_code"] == 5 and result["status"] == "error", proc.stderr
    assert "Error:" in report.read_text()


@pytest.mark.parametrize(
    "bad",
    [["--bogus-flag"], ["--max-attempts", "many"], ["--test-timeout", "0"], ["--workdir", "/no/such/folder"]],
)
@pytest.mark.parametrize("output_format", ["json", "text"])
def test_a_usage_error_still_writes_the_report_and_the_json_result(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path, bad: list[str], output_format: str
) -> None:
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", "pytest -q", *bad, "--report", str(report), "--output-format", output_format]
    proc = run_kimi(args, repo, env, server, timeout=60)
    assert proc.returncode == 2, proc.stderr
    text = report.read_text()
    assert "## kimi ci-repair: error" in text and "Error: usage:" in text and "`pytest -q`" in text
    if output_format == "json":
        result = result_of(proc)
        assert result["status"] == "error" and result["exit_code"] == 2 and result["error"].startswith("usage: ")
        assert result["report"] == str(report)
    else:
        assert proc.stdout == ""
    assert server.requests == []


def test_a_missing_test_option_still_writes_the_report(repo: Path, env: dict, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    proc = run_kimi(["ci-repair", "--report", str(report), "--output-format", "json"], repo, env)
    assert proc.returncode == 2 and "--test" in result_of(proc)["error"], proc.stderr
    assert "Missing option" in report.read_text()


# --- `-p --check`: the check's exit code, not the model's word ---------------------------------------------------


@pytest.mark.timeout(120)
def test_p_check_exits_non_zero_when_pytest_fails_whatever_the_model_said(
    red_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "Tests pass."})
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
    proc = run_kimi(["-p", "fix add", "--check", check, "--output-format", "json"], red_repo, env, server)
    result = result_of(proc)
    assert proc.returncode == 1 and result["reason"] == "check_failed", proc.stderr
    assert result["check"]["exit_code"] == 1 and result["check"]["passed"] is False
    server.add({"tool_calls": [tool_call("StrReplaceFile", FIX, "e1")]}, {"text": "Fixed."})
    proc = run_kimi(["-p", "fix add", "--check", check, "--output-format", "json"], red_repo, env, server)
    assert proc.returncode == 0 and result_of(proc)["check"]["passed"] is True, proc.stderr


# --- cost before the first request ------------------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_a_cost_estimate_is_printed_before_the_first_request_and_pack_budget_shrinks_it(
    red_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (red_repo / "big.py").write_text("".join(f"def helper_{k}(x):\n    return x * {k}\n\n" for k in range(3000)))
    git(red_repo, "add", ".")
    git(red_repo, "commit", "-q", "-m", "a big module")
    sizes = []
    for extra in ([], ["--pack-budget", "2000"]):
        server.add({"text": "I give up."})
        args = ["ci-repair", "--test", TEST_CMD, "--output-format", "json", "--max-attempts", "1", *extra]
        proc = run_kimi(args, red_repo, env, server, timeout=200)
        assert proc.returncode == 3, proc.stderr
        estimate = result_of(proc)["estimate"]
        line = next(x for x in proc.stderr.splitlines() if "cost estimate" in x)
        assert f"{estimate['first_request_tokens']:,} input tokens" in line
        # printed before the request was sent: the agent's progress comes after it on stderr
        assert proc.stderr.index("cost estimate") < proc.stderr.index("attempt 1: running the tests again")
        sizes.append(estimate["first_request_tokens"])
        git(red_repo, "switch", "-q", "main")
    assert sizes[1] < sizes[0] / 2, sizes


def test_help_documents_every_status_exit_code_and_the_new_switches(repo: Path, env: dict) -> None:
    from kimi_cli.frontends.ci_repair.results import ERROR_CODES, EXIT_CODES

    proc = run_kimi(["ci-repair", "--help"], repo, {**env, "COLUMNS": "200"})
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0
    for code in {*EXIT_CODES.values(), *ERROR_CODES}:
        assert f"{code} " in text.split("Exit codes:")[1], code
    for flag in ("--pass-env", "--allow-network", "--pack-budget", "--no-pack", "--effort"):
        assert flag in text, flag
