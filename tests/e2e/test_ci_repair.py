"""`kimi ci-repair` end to end on a real open-source project (six, from its PyPI sdist) with a planted bug."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, git, run_kimi, tool_call

CORPORA = TESTS_DIR / ".corpora"
BUG = ('int2byte = struct.Struct(">B").pack', 'int2byte = struct.Struct(">H").pack')
TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider test_six.py"


def six_sdist() -> Path:
    found = sorted(CORPORA.glob("six-*.tar.gz"))
    if not found:
        CORPORA.mkdir(exist_ok=True)
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-d",
                str(CORPORA),
                "six==1.17.0",
            ],
            capture_output=True,
            text=True,
        )
        found = sorted(CORPORA.glob("six-*.tar.gz"))
        if not found:
            pytest.skip(f"the six sdist could not be downloaded (.ci/run fetches it): {got.stderr[-300:]}")
    return found[-1]


@pytest.fixture
def six_repo(tmp_path: Path) -> Path:
    with tarfile.open(six_sdist()) as tar:
        tar.extractall(tmp_path, filter="data")
    root = next(tmp_path.glob("six-*"))
    (root / ".gitignore").write_text("*.egg-info/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "six sdist")
    return root


def plant_bug(root: Path) -> None:
    source = (root / "six.py").read_text()
    assert BUG[0] in source
    (root / "six.py").write_text(source.replace(BUG[0], BUG[1], 1))
    git(root, "commit", "-q", "-am", "break ensure_str")


@pytest.mark.timeout(360)  # the project's own test suite, run per attempt
def test_red_to_green_commits_on_a_branch_and_reports(
    six_repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    plant_bug(six_repo)
    head = git(six_repo, "rev-parse", "HEAD").strip()
    fix = {"path": "six.py", "edit": {"old": BUG[1], "new": BUG[0]}}
    server.add(
        {"tool_calls": [tool_call("Grep", {"pattern": "int2byte", "path": "six.py"}, "g1")]},
        {"tool_calls": [tool_call("StrReplaceFile", fix, "e1")]},
        {"text": "Cause: int2byte packed two bytes ('>H'). Change: pack one unsigned byte ('>B')."},
    )
    report = tmp_path / "report.md"
    proc = run_kimi(
        ["ci-repair", "--test", TEST_CMD, "--report", str(report), "--output-format", "json"],
        six_repo,
        env,
        server,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "fixed" and result["tests_after"]["exit_code"] == 0
    assert result["tests_before"]["failing"] == ["test_six.py::test_int2byte"]
    branch = f"kimi/ci-repair-{head[:8]}"
    assert result["branch"] == branch and git(six_repo, "branch", "--show-current").strip() == branch
    assert git(six_repo, "log", "-1", "--format=%s").startswith("Fix failing tests (kimi ci-repair)")
    assert git(six_repo, "show", "--name-only", "--format=", "HEAD").split() == ["six.py"]
    leftovers = git(six_repo, "status", "--porcelain").splitlines()
    assert leftovers == ["?? __pycache__/"]  # what the test run left behind was not committed
    text = report.read_text()
    assert "`six.py`" in text and "Tests before: red" in text and "Tests after: green" in text
    first_request = server.requests[0]["messages"][-1]["content"]
    assert "test_int2byte" in first_request and "Failing tests" in first_request


@pytest.mark.timeout(360)
def test_already_green_exits_0_without_calling_the_model(
    six_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    proc = run_kimi(["ci-repair", "--test", TEST_CMD], six_repo, env, server, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "already pass" in proc.stdout
    assert server.requests == []


@pytest.mark.timeout(360)
def test_a_fix_that_never_passes_exits_3_and_says_so(
    six_repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    plant_bug(six_repo)
    wrong = {"path": "six.py", "edit": {"old": BUG[1], "new": 'int2byte = struct.Struct(">I").pack'}}
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", wrong, "e1")]},
        {"text": "Tried a wider format."},
        {"text": "I could not find the cause."},
    )
    report = tmp_path / "report.md"
    proc = run_kimi(
        ["ci-repair", "--test", TEST_CMD, "--max-attempts", "2", "--report", str(report)],
        six_repo,
        env,
        server,
        timeout=300,
    )
    assert proc.returncode == 3, proc.stderr
    assert "Not fixed within the budget" in report.read_text()
    assert "still red" in git(six_repo, "log", "-1", "--format=%s")
