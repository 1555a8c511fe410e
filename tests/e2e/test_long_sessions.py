"""Long sessions as real models run them: edit-test loops, rereads, many steps, parallel reads, undo by turn."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call, tool_results


def events(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.mark.timeout(360)  # a 300 s run
def test_an_edit_test_loop_of_50_rounds_that_rereads_and_reruns_finishes(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / "app.py").write_text("N = 0\nprint('N is', N)\n")
    for i in range(50):
        server.add(
            {"tool_calls": [tool_call("ReadFile", {"path": "app.py"}, f"r{i}")]},
            {"tool_calls": [tool_call("StrReplaceFile", {"path": "app.py", "edit": {"old": f"N = {i}\n",
                                                                                   "new": f"N = {i + 1}\n"}})]},
            {"tool_calls": [tool_call("Shell", {"command": "python3 app.py"}, f"t{i}")]},
        )  # fmt: skip
    server.add({"text": "fifty rounds done"})
    proc = run_kimi(["-p", "iterate", "--output-format", "json"], repo, env, server, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = result_json(proc)
    assert result["reason"] == "done" and result["steps"] == 151
    assert (repo / "app.py").read_text().startswith("N = 50\n")
    assert not any("[note:" in r for r in tool_results(server, 150))


def test_the_same_call_with_the_same_result_is_reminded_at_3_and_stopped_at_8(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(*[{"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, f"r{i}")]} for i in range(12)])
    proc = run_kimi(["-p", "loop", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 1
    assert result_json(proc)["reason"] == "loop_detected"
    assert len(server.requests) == 8
    results = tool_results(server, 7)
    assert "[note:" not in results[1] and "same result 3 times in a row" in results[2]
    assert "ReadFile" in proc.stderr and "8 times in a row" in proc.stderr


def test_a_different_call_in_between_resets_the_count(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    for i in range(12):
        server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, f"r{i}")]})
        server.add({"tool_calls": [tool_call("Glob", {"pattern": "*.md"}, f"g{i}")]})
    server.add({"text": "studied"})
    proc = run_kimi(["-p", "study", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["steps"] == 25


def test_identical_calls_in_one_turn_run_once_and_share_the_result(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    same = {"command": "echo ran >> count.txt; wc -l < count.txt"}
    server.add({"tool_calls": [tool_call("Shell", same, f"s{i}") for i in range(3)]}, {"text": "ok"})
    proc = run_kimi(["-p", "count", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "count.txt").read_text() == "ran\n"
    results = tool_results(server, 1)
    assert len(results) == 3 and len(set(results)) == 1


@pytest.mark.timeout(360)  # a 300 s run
def test_a_300_step_headless_run_is_not_cut_at_200(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*[{"tool_calls": [tool_call("Glob", {"pattern": f"*{i}"}, f"g{i}")]} for i in range(300)])
    server.add({"text": "long work done"})
    proc = run_kimi(["-p", "long", "--output-format", "json"], repo, env, server, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["steps"] == 301


class MeetingSite:
    """A loopback web server that answers a request only once `count` requests are waiting: reads that run
    one after another never all get there, so each answer says whether they met (no timing involved)."""

    def __init__(self, count: int) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        meeting = threading.Barrier(count, timeout=30)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                try:
                    meeting.wait()
                    body = f"contents of {self.path}\n".encode()
                except threading.BrokenBarrierError:
                    body = b"the reads did not run at the same time\n"
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_four_slow_reads_in_one_turn_run_concurrently_and_keep_their_order(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    site = MeetingSite(4)  # FetchURL is a read: four calls in one answer form one concurrent batch
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[web]\nallowed_hosts = ["127.0.0.1"]\nallowed_private_hosts = ["127.0.0.1"]\n')
    paths = [f"/slow{i}" for i in range(4)]
    try:
        calls = [tool_call("FetchURL", {"url": site.url + p}, f"f{i}") for i, p in enumerate(paths)]
        server.add({"tool_calls": calls}, {"text": "ok"})
        proc = run_kimi(["-p", "read", "--output-format", "stream-json", "--no-pack"], repo, env, server)
    finally:
        site.close()
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 1)
    assert [f"contents of {p}" in r for p, r in zip(paths, results, strict=True)] == [True] * 4, results


def test_a_write_between_reads_is_a_barrier(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "a.txt").write_text("old\n")
    calls = [
        tool_call("ReadFile", {"path": "a.txt"}, "r1"),
        tool_call("WriteFile", {"path": "a.txt", "content": "new\n"}, "w"),
        tool_call("ReadFile", {"path": "a.txt"}, "r2"),
    ]
    server.add({"tool_calls": calls}, {"text": "ok"})
    proc = run_kimi(["-p", "rw"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    first, _, last = tool_results(server, 1)
    assert "old" in first and "new" in last


FIX = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}


def test_undo_with_no_argument_takes_back_the_last_prompt_not_just_the_test_run(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]},
        {"tool_calls": [tool_call("StrReplaceFile", FIX, "e1")]},
        {"tool_calls": [tool_call("Shell", {"command": "python3 -c 'import calc; print(calc.add(2, 2))'"}, "t1")]},
        {"text": "fixed"},
    )
    assert run_kimi(["-p", "fix the failing test"], repo, env, server).returncode == 0
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "notes.md", "content": "notes\n"}, "w2")]},
        {"text": "noted"},
    )
    assert run_kimi(["-p", "write notes", "--continue"], repo, env, server).returncode == 0

    listing = run_kimi(["undo", "--list"], repo, env)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()[1:]
    assert len(lines) == 4  # two prompts and the two steps that changed files; the test run is not one
    assert 'prompt "fix the failing test"' in lines[0] and "calc.py (M)" in lines[0]
    assert lines[3].strip().startswith("1 ") and "notes.md (A)" in lines[3]

    undo = run_kimi(["undo"], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert not (repo / "notes.md").exists() and "a + b" in (repo / "calc.py").read_text()
    undo = run_kimi(["undo"], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert "a - b" in (repo / "calc.py").read_text()

    server.add({"text": "fresh start"})
    assert run_kimi(["-p", "again", "--continue"], repo, env, server).returncode == 0
    messages = server.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user"]  # a change note, then the prompt
    assert messages[-1]["content"] == "again"
