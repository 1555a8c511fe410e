"""What a session's start does once, or not at all (issue 47): a long block counted by one run is a lookup for
the next (no tokenizer load), the git state is one git call, and KIMI_TIMING=1 reports the phases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kimi_cli.context.request_size import KEEP_CHARS, SHORT_BYTES, RequestMeter
from kimi_cli.context.tokens import TokenCounter
from kimi_cli.hostsafe.git.state import git_state
from kimi_cli.llm.models import lookup


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def test_a_long_block_counted_once_is_a_lookup_for_the_next_run_and_loads_no_tokenizer(tmp_path: Path) -> None:
    cache = tmp_path / "tokens.sqlite"
    text = "def f(x):\n    return x + 1\n" * (KEEP_CHARS // 10)
    first = RequestMeter(TokenCounter(cache, factor=1.0), lookup("kimi-k3.1-pro"))
    counted = first.raw(text)
    assert counted == TokenCounter(tmp_path / "other.sqlite", factor=1.0).raw(text)  # the tokenizer's own count
    again = TokenCounter(cache, factor=1.0)
    assert RequestMeter(again, lookup("kimi-k3.1-pro")).raw(text) == counted
    assert not again.loaded  # the next run's count came from the cache
    changed = RequestMeter(again, lookup("kimi-k3.1-pro")).raw(text + "y = 2\n")
    assert again.loaded and changed > counted  # another text is counted, never taken for the cached one


def test_a_short_block_is_bounded_by_its_bytes_until_the_tokenizer_is_loaded(tmp_path: Path) -> None:
    counter = TokenCounter(tmp_path / "tokens.sqlite", factor=1.0)
    meter = RequestMeter(counter, lookup("kimi-k3.1-pro"))
    for text in ("say hi", "fix the failing test in tests/test_app.py", "日本語のテキスト" * 10):
        assert len(text.encode()) <= SHORT_BYTES
        bound = meter.raw(text)
        assert not counter.loaded
        assert bound >= TokenCounter(tmp_path / "exact.sqlite", factor=1.0).raw(text)  # never under the count
    counter.raw("load it")
    assert meter.raw("say hi") == 2  # once loaded, the exact count


@pytest.mark.parametrize("case", ["clean", "dirty", "untracked", "detached", "unborn"])
def test_the_git_state_from_one_call_matches_what_four_calls_said(tmp_path: Path, case: str) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    if case != "unborn":
        (tmp_path / "a.txt").write_text("a\n")
        git(tmp_path, "add", "a.txt")
        git(tmp_path, "commit", "-qm", "a")
    if case == "dirty":
        (tmp_path / "a.txt").write_text("b\n")
    if case == "untracked":
        (tmp_path / "new.txt").write_text("n\n")
    if case == "detached":
        git(tmp_path, "checkout", "-q", "--detach")
    head = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=tmp_path, capture_output=True,
                          text=True).stdout.strip() or None  # fmt: skip
    branch = subprocess.run(["git", "symbolic-ref", "--quiet", "--short", "HEAD"], cwd=tmp_path,
                            capture_output=True, text=True).stdout.strip() or None  # fmt: skip
    dirty = bool(git(tmp_path, "status", "--porcelain").strip())
    assert git_state(tmp_path) == {"branch": branch, "head": head, "dirty": dirty,
                                   "detached": branch is None and head is not None}  # fmt: skip


def test_no_git_state_outside_a_repository_or_in_a_bare_one(tmp_path: Path) -> None:
    assert git_state(tmp_path) is None
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    assert git_state(bare) is None


def test_kimi_timing_reports_each_phase_on_stderr_and_nothing_without_it() -> None:
    code = "from kimi_cli.util import timing; timing.mark('one'); timing.first('two'); timing.first('two')"
    env = {**os.environ, "KIMI_TIMING": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    phases = [line.split()[0] for line in out.stderr.splitlines()[1:]]
    assert out.stderr.startswith("kimi timing") and phases == ["one", "two", "exit", "total"]
    assert out.stdout == ""
    env.pop("KIMI_TIMING")
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert quiet.stderr == ""


def test_the_sandbox_env_allowlist_matches_as_fnmatch_did_without_compiling_each_name() -> None:
    import fnmatch

    from kimi_cli.sandbox import env as sandbox_env_module
    from kimi_cli.sandbox.env import ALLOW, sandbox_env

    names = [*ALLOW, "LC_ALL", "LC_", "PIP_INDEX_URL", "PIPX", "POETRY_VIRTUALENVS_IN_PROJECT", "path", "PATHX",
             "XPATH", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "MY_TOOL_HOME", "A[B", "CI_X"]  # fmt: skip
    allow, deny = ["MY_*", "A[[]B", "TOOL?"], ["MY_TOOL_HOME", "CI_*"]
    for name in names:
        for patterns in (ALLOW, allow, deny):
            expected = any(fnmatch.fnmatchcase(name, p) for p in patterns)
            assert sandbox_env_module._matches(name, patterns) == expected, (name, patterns)
    environ = {name: "value" for name in names}
    out, withheld = sandbox_env(environ, allow, deny)
    assert "LC_ALL" in out and "PIP_INDEX_URL" in out and "A[B" in out and "PATHX" not in out
    assert "MY_TOOL_HOME" in withheld and "CI_X" in withheld and "DATABASE_URL" in withheld
    fnmatch._compile_pattern.cache_clear()  # type: ignore[attr-defined]
    sandbox_env(environ)
    assert fnmatch._compile_pattern.cache_info().currsize <= 5  # type: ignore[attr-defined]  # LC_*, PIP_*, ...
