"""Background commands: start, read, stop, limit, the finished note, and no process outliving kimi."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import TEST_KEY, free_port, kimi_executable, processes_with, run_kimi, tool_call, tool_results, wait_until

FETCH = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/').status)\""


def test_a_background_server_is_reached_by_a_later_command_then_stopped(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    port = free_port()
    serve = f"python3 -m http.server {port} --bind 127.0.0.1"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": serve, "background": True}, "bg")]},
        {"tool_calls": [tool_call("Shell", {"command": f"sleep 1; {FETCH.format(port=port)}"}, "curl")]},
        {"tool_calls": [tool_call("TaskOutput", {"id": "task-1"}, "out")]},
        {"tool_calls": [tool_call("TaskStop", {"id": "task-1"}, "stop")]},
        {"text": "served"},
    )
    # bwrap gives each command its own network namespace when the network is off, so a server started in
    # one call is reachable from a later call only with the host network (--allow-network).
    proc = run_kimi(["-p", "serve", "--allow-network"], repo, env, server, timeout=60)
    assert proc.returncode == 0, proc.stderr
    started, fetched, output, stopped = tool_results(server, 4)
    assert started.startswith("task_id: task-1")
    assert "200" in fetched
    assert "task-1: running" in output and '"GET / HTTP/1.1" 200' in output
    assert "task-1 stopped" in stopped
    wait_until(lambda: processes_with(f"http.server {port}") == [], 5, "the stopped server to be gone")


def test_with_the_network_off_each_command_has_its_own_loopback(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    port = free_port()
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": f"python3 -m http.server {port}", "background": True})]},
        {"tool_calls": [tool_call("Shell", {"command": f"sleep 1; {FETCH.format(port=port)}"}, "curl")]},
        {"text": "ok"},
    )
    proc = run_kimi(["-p", "serve"], repo, env, server, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Connection refused" in tool_results(server, 2)[1]
    wait_until(lambda: processes_with(f"http.server {port}") == [], 5, "the server to die with the session")


def test_a_fifth_task_is_refused_and_a_finished_one_is_announced(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    starts = [tool_call("Shell", {"command": f"sleep 30 # bg{i}", "background": True}, f"s{i}") for i in range(5)]
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo quick-done", "background": True}, "q")]},
        {"tool_calls": [tool_call("Shell", {"command": "sleep 1"}, "wait")]},
        {"tool_calls": starts},
        {"text": "ok"},
    )
    proc = run_kimi(["-p", "many"], repo, env, server, timeout=60)
    assert proc.returncode == 0, proc.stderr
    notes = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user" and "[kimi]" in m["content"]]
    assert len(notes) == 1 and "background task task-1 (`echo quick-done`) exited with code 0" in notes[0]
    results = tool_results(server, 3)[-5:]
    assert all(r.startswith("task_id:") for r in results[:4])
    assert "4 background tasks are already running" in results[4]
    wait_until(lambda: processes_with("sleep 30 # bg") == [], 5, "the tasks to die with the session")


def test_tasks_die_when_kimi_is_killed(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "sleep 300 # orphan-check", "background": True}, "bg")]},
        {"tool_calls": [tool_call("Shell", {"command": "sleep 60"}, "hold")]},
    )
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), "-p", "x", "--output-format", "stream-json"], cwd=repo, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "tool_call" and "sleep 60" in event["arguments"]:
            break
    wait_until(lambda: processes_with("sleep 300 # orphan-check"), 15, "the background task to start")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: processes_with("sleep 300 # orphan-check") == [], 5, "the task to die with kimi")
