"""A hook's output is read within its cap as it streams: a PostToolUse hook that writes a gigabyte on each of
stdout and stderr (as one that `cat`s a file the model made would) leaves kimi's RSS far below it, and the
model reads the first 64 KB with a note of where it was cut; a hook's normal output still reaches the model
whole. The output is made with `yes | head -c` (no file on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, run_for_peak_rss, run_kimi, tool_call, tool_results

GIGABYTE = 1_000_000_000


def user_hooks(home: Path, toml: str) -> None:
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + "\n" + toml)


@pytest.mark.timeout(360)  # a gigabyte per stream: a 300 s budget
def test_a_hook_writing_a_gigabyte_on_each_stream_leaves_kimi_under_600_mb_and_says_it_was_cut(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    flood = f"yes out-out-out | head -c {GIGABYTE}; yes err-err-err | head -c {GIGABYTE} >&2; exit 2"
    user_hooks(home, f'[[hooks.PostToolUse]]\nmatcher = "ReadFile"\ntimeout = 300\ncommand = "{flood}"\n')
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"text": "done"})
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    code, peak_kib = run_for_peak_rss([*kimi_executable(), "-p", "read calc.py", "--no-pack"], repo, full_env)
    assert code == 0
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib // 1024} MB"
    (result,) = tool_results(server, 1)
    assert "err-err-err" in result and "out-out-out" not in result  # exit 2: stderr is the reason
    assert f"output cut at 64 KB: the hook wrote {GIGABYTE:,} bytes, the rest was dropped" in result
    assert len(result) < 80_000


def test_a_hooks_normal_output_reaches_the_model_whole(repo: Path, home: Path, env: dict, server: ScriptedModelServer):
    reason = "calc.py is generated; edit calc.in instead. " * 40  # 1.8 KB, well under the cap
    user_hooks(
        home,
        f'[[hooks.UserPromptSubmit]]\ncommand = "echo remember to run the tests"\n'
        f'[[hooks.PostToolUse]]\nmatcher = "ReadFile"\ncommand = "printf \'{reason}\' >&2; exit 2"\n',
    )
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]}, {"text": "done"})
    proc = run_kimi(["-p", "read calc.py"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "remember to run the tests" in str(server.requests[0]["messages"])
    (result,) = tool_results(server, 1)
    assert reason.strip() in result and "output cut" not in result
