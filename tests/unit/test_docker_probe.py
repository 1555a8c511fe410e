"""The Docker backend's probe asks the engine's /_ping over DOCKER_HOST with the standard library (the SDK's
import cost kimi doctor ~1 s): a loopback engine that answers 200 OK works, one that answers 500, a closed
port and a missing socket do not, each named; the real engine, where there is one, answers too."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_cli.sandbox.backends.docker import docker_works


def serve(listener: socket.socket, answer: bytes, seen: list[bytes]) -> None:
    conn, _ = listener.accept()
    with conn:
        seen.append(conn.recv(4096))
        conn.sendall(answer)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    path = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    with listener:
        yield f"unix://{path}", listener


def test_an_engine_answering_ok_works(engine: tuple[str, socket.socket], monkeypatch: pytest.MonkeyPatch) -> None:
    host, listener = engine
    seen: list[bytes] = []
    thread = threading.Thread(target=serve, args=(listener, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK", seen))
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", host)
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    assert docker_works() == (True, "")
    thread.join(5)
    assert seen and seen[0].startswith(b"GET /_ping HTTP/1.0\r\n")


def test_an_engine_answering_500_a_closed_port_and_no_socket_do_not(
    engine: tuple[str, socket.socket], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host, listener = engine
    thread = threading.Thread(target=serve, args=(listener, b"HTTP/1.1 500 Internal Server Error\r\n\r\n", []))
    thread.start()
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.setenv("DOCKER_HOST", host)
    ok, why = docker_works()
    thread.join(5)
    assert not ok and "does not answer (ConnectionError)" in why
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    assert docker_works() == (False, "the Docker engine does not answer (ConnectionRefusedError)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'none.sock'}")
    assert docker_works() == (False, "the Docker engine does not answer (FileNotFoundError)")


def test_the_real_engine_answers_where_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe agrees with the docker CLI about the engine at the default socket. The socket file alone
    says nothing: CI's unit layer runs before dockerd starts, beside a socket file a package left behind."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    sock = Path("/var/run/docker.sock")
    if not sock.exists():
        pytest.skip("no Docker engine here")
    ok, why = docker_works()
    if not os.access(sock, os.R_OK | os.W_OK):
        assert (ok, why) == (False, "the Docker engine does not answer (PermissionError)")
        return
    cli = shutil.which("docker")
    if cli is None:
        pytest.skip("no docker CLI to compare with")
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    answered = subprocess.run([cli, "info"], capture_output=True, env=env, timeout=60).returncode == 0
    if answered:
        assert (ok, why) == (True, "")
    else:
        assert not ok and why.startswith("the Docker engine does not answer (")
