"""What a user meets first: conventional metavars, forgiving GPU names, and -v logs with the key redacted."""

from __future__ import annotations

from pathlib import Path

from scripted_server import ScriptedModelServer
from support import TEST_KEY, run_kimi


def test_help_uses_conventional_metavars(repo: Path, env: dict) -> None:
    import re

    out = run_kimi(["--help"], repo, env).stdout
    for option, metavar in (("--prompt", "TASK"), ("--image", "PATH"), ("--base-url", "URL"), ("--max-steps", "N"),
                            ("--output-format", "FORMAT")):  # fmt: skip
        assert re.search(rf"{option}\s+(-\w\s+)?{metavar}\b", out), option  # Typer's rich help: option, short, metavar
    assert "<str>" not in out and "<int>" not in out and "list[str]" not in out


def test_gpu_names_ignore_case_and_unknown_ones_get_a_suggestion(repo: Path, env: dict) -> None:
    ok = run_kimi(["engine", "plan", "--gpu", "B200", "--json"], repo, env)
    assert ok.returncode in (0, 3), ok.stderr
    assert '"gpu"' in ok.stdout or "b200" in ok.stdout.lower()
    bad = run_kimi(["engine", "plan", "--gpu", "H20O"], repo, env)
    assert bad.returncode == 2
    assert "did you mean 'h200'" in bad.stderr and "--hbm-gb" in bad.stderr


def test_verbose_logs_the_request_to_stderr_and_a_file_without_the_key(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add({"text": "hello"})
    proc = run_kimi(["-v", "-p", f"why does {TEST_KEY} fail?"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "POST " in proc.stderr and "/chat/completions" in proc.stderr
    logs = list((home / ".kimi" / "logs").glob("kimi-*.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert "POST " in text and "messages=" in text
    assert TEST_KEY not in text and TEST_KEY not in proc.stderr
    assert "why does [REDACTED] fail?" in text
