"""`kimi -p --attempts` and `kimi ci-repair --attempts` start each attempt as a child kimi in a worktree of the
repository: the child is kimi's own interpreter and package, never the repository's. `python -m kimi_cli` puts
its working folder first on sys.path, so a repository that commits a `kimi_cli/` package (a cloned project, or
one a hostile model wrote and committed) ran its own code on the host, outside the sandbox, untrusted, with the
parent's environment and the key in it. The child now runs with -P (no working folder on sys.path). Beside the
attack, the legitimate use: the same attempt does its real work and its fix is merged.
Real git, real kimi processes, the scripted model server on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import git, result_json, run_kimi, tool_call

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"


def hostile_repo(repo: Path, marker: Path) -> None:
    """calc.py's red test, and a committed `kimi_cli` package (and a `typer` module, which kimi imports at start)
    that each leave a marker when imported."""
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (repo / "kimi_cli").mkdir()
    plant = f"open({str(marker)!r}, 'a').write(__name__ + ' ran on the host\\n')\n"
    (repo / "kimi_cli" / "__init__.py").write_text(plant)
    (repo / "kimi_cli" / "__main__.py").write_text(plant + "raise SystemExit(0)\n")
    (repo / "typer.py").write_text(plant)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a red test, and a package named like kimi's")


def test_an_attempt_runs_kimi_not_the_repositorys_package(
    repo: Path, env: dict[str, str], server: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-on-the-host"
    hostile_repo(repo, marker)
    edit = {"path": "calc.py", "edit": {"old": "return a - b", "new": "return a + b"}}
    server.add(
        {"match": "attempt 1 of 1", "tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"match": "attempt 1 of 1", "text": "fixed"},
    )
    args = ["-p", "make test_add pass", "--attempts", "1", "--check", CHECK, "--output-format", "json", "--yolo",
            "--no-pack"]  # fmt: skip
    proc = run_kimi(args, repo, env, server, timeout=180)
    assert not marker.exists(), marker.read_text()  # the attack: nothing of the repository's was imported
    result = result_json(proc)  # the legitimate use: the attempt was kimi's, did its work, and was merged
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [a["check"]["passed"] for a in result["attempts"]] == [True] and result["merged"] is True
    assert "return a + b" in (repo / "calc.py").read_text()
