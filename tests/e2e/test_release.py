"""The release check: the built wheel, installed into a fresh venv outside the checkout, works as users run it.

`.ci/run` builds the sdist and wheel with `python -m build` and installs the wheel into a fresh venv, then
points KIMI_RELEASE_VENV and KIMI_RELEASE_WHEEL here. Run alone, the fixture builds and installs them itself.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, git, tool_call

ROOT = ROOT_DIR
# Run alone, the first test also builds the wheel and installs it with its dependencies into a fresh venv.
pytestmark = pytest.mark.timeout(600)

MAPPED = {"tools": "kimi_cli/tools", "engine": "kimi_cli/engine", "kimi_cli": "kimi_cli"}


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(venv, wheel): from .ci/run when it built them, else built here."""
    venv_dir, wheel = os.environ.get("KIMI_RELEASE_VENV"), os.environ.get("KIMI_RELEASE_WHEEL")
    if venv_dir and wheel:
        yield Path(venv_dir), Path(wheel)
        return
    out = tmp_path_factory.mktemp("release")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
    )
    built = next((out / "dist").glob("kimi_cli_agent-*.whl"))
    venv.EnvBuilder(with_pip=True).create(out / "venv")
    subprocess.run([str(out / "venv" / "bin" / "pip"), "install", "-q", str(built)], check=True, capture_output=True)
    yield out / "venv", built


def source_packages() -> set[str]:
    """Every folder with an __init__.py, named as it installs (tools/ -> kimi_cli/tools)."""
    found = set()
    for top, installed in MAPPED.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).as_posix()
            found.add(installed if rel == "." else f"{installed}/{rel}")
    return found


def test_the_wheel_holds_every_package_of_the_source_tree(release: tuple[Path, Path]) -> None:
    names = zipfile.ZipFile(release[1]).namelist()
    in_wheel = {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")}
    assert source_packages() - in_wheel == set()
    assert "kimi_cli/engine/gpu_check.sh" in names
    prompts = sorted(p.name for p in (ROOT / "kimi_cli" / "instructions").glob("*.md"))
    assert prompts and all(f"kimi_cli/instructions/{name}" in names for name in prompts)  # the system prompt


def installed_env(home: Path, server: ScriptedModelServer | None = None) -> dict[str, str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "NO_COLOR": "1"}
    if server is not None:
        env.update({"KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY})
    return env


def kimi(release: tuple[Path, Path], *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = release[0] / "bin" / "kimi"
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_installed_kimi_prints_its_version_and_help(release: tuple[Path, Path], tmp_path: Path) -> None:
    env = installed_env(tmp_path)
    version = kimi(release, "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"kimi \S+\n", version.stdout), version.stdout  # the version alone (kimi doctor reports)
    help_ = kimi(release, "--help", cwd=tmp_path, env=env)
    assert help_.returncode == 0 and re.search(r"--prompt\s+-p\s+TASK", help_.stdout)  # Typer's rich help


def test_installed_kimi_runs_a_task_with_a_tool_call_and_an_edit(
    release: tuple[Path, Path], repo: Path, home: Path, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}})]},
        {"text": "fixed the sign"},
    )
    proc = kimi(release, "-p", "fix add", cwd=repo, env=installed_env(home, server))
    assert proc.returncode == 0, proc.stderr
    assert "fixed the sign" in proc.stdout
    assert "a + b" in (repo / "calc.py").read_text()


def test_installed_kimi_packs_a_repository(release: tuple[Path, Path], repo: Path, home: Path) -> None:
    (repo / "util.py").write_text("def helper():\n    return 1\n")
    git(repo, "add", ".")
    proc = kimi(release, "pack", "--format", "json", cwd=repo, env=installed_env(home))
    assert proc.returncode == 0, proc.stderr
    assert "util.py" in proc.stdout and "calc.py" in proc.stdout


def test_installed_kimi_plans_the_engine(release: tuple[Path, Path], tmp_path: Path) -> None:
    proc = kimi(release, "engine", "plan", "--gpu", "H200", "--nodes", "2", cwd=tmp_path, env=installed_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "fits" in proc.stdout.lower()


def test_installed_kimi_starts_and_leaves_an_interactive_session(
    release: tuple[Path, Path], repo: Path, home: Path, server: ScriptedModelServer
) -> None:
    env = {**installed_env(home, server), "TERM": "xterm-256color"}
    exe = str(release[0] / "bin" / "kimi")
    child = pexpect.spawn(exe, [], cwd=str(repo), env=env, dimensions=(40, 120), encoding="utf-8", timeout=60)
    child.expect("❯")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
