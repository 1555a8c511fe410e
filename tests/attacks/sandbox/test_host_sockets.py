"""Host unix sockets: nothing outside the workspace and the private tmp answers, on every backend.

The stand-ins listen where real host sockets do, outside /tmp and /run (bwrap masks those wholesale):
a folder under /var/tmp holds a "host" socket (docker.sock, an ssh-agent, a D-Bus bus) that answers
"outside". The legitimate use beside each attack: a test suite's own server and client on a socket in
the workspace. The race: a background task swaps a workspace folder with a link to the host folder
(renameat2 RENAME_EXCHANGE) while the foreground connects through it hundreds of times.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, UnixServer, backends, make_rig, need_probe

WAIT_FOR_SOCKET = "for i in $(seq 100); do [ -S {path} ] && break; sleep 0.05; done"


@dataclass
class Host:
    folder: Path  # outside /tmp and /run, like /var/lib/docker or a home folder
    server: UnixServer
    agent: UnixServer  # SSH_AUTH_SOCK points here
    abstract: UnixServer
    abstract_name: str


@pytest.fixture(params=backends())
def host_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Rig, Host]]:
    folder = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    name = f"@kimi-attack-{secrets.token_hex(4)}"
    host = Host(folder, UnixServer(str(folder / "host.sock")), UnixServer(str(folder / "agent.sock")),
                UnixServer(name), name)  # fmt: skip
    rig, _ = make_rig(tmp_path, request.param, environ={"SSH_AUTH_SOCK": str(folder / "agent.sock")})
    try:
        yield rig, host
    finally:
        rig.close()
        for server in (host.server, host.agent, host.abstract):
            server.close()
        shutil.rmtree(folder, ignore_errors=True)


def legit_server_and_client(rig: Rig, probe: str) -> None:
    """A test suite's own unix socket in the workspace works: in one command, and across two."""
    same = rig.run(
        f"{probe} serve app.sock > served.log & {WAIT_FOR_SOCKET.format(path='app.sock')}; {probe} connect app.sock"
    )
    assert "connected: pong" in same.output, same.output
    if rig.shell.tasks is not None:  # a background server, a client in a later command
        rig.run("rm -f app2.sock")
        task = rig.background(f"{probe} serve app2.sock")
        client = rig.run(f"{WAIT_FOR_SOCKET.format(path='app2.sock')}; {probe} connect app2.sock")
        assert "connected: pong" in client.output, client.output
        rig.wait_task(task)


def test_a_host_socket_outside_the_workspace_does_not_answer(host_rig: tuple[Rig, Host]) -> None:
    rig, host = host_rig
    probe = need_probe(rig)
    result = rig.run(
        f"{probe} connect {host.folder}/host.sock; cd {host.folder} && ../../..{rig.ws}/probe connect host.sock"
    )
    assert "connected" not in result.output, result.output
    assert host.server.accepted == 0
    legit_server_and_client(rig, probe)


def test_a_link_in_the_workspace_to_a_host_socket_does_not_answer(host_rig: tuple[Rig, Host]) -> None:
    rig, host = host_rig
    probe = need_probe(rig)
    os.symlink(host.folder / "host.sock", rig.ws / "link.sock")
    os.symlink(host.folder, rig.ws / "linkdir")
    result = rig.run(f"{probe} connect link.sock; {probe} connect linkdir/host.sock; ln -s {host.folder} made;"
                     f" {probe} connect made/host.sock")  # fmt: skip
    assert "connected" not in result.output, result.output
    assert host.server.accepted == 0


def test_abstract_sockets_of_the_host_do_not_answer(host_rig: tuple[Rig, Host]) -> None:
    rig, host = host_rig
    probe = need_probe(rig)
    result = rig.run(f"{probe} connect {host.abstract_name}")
    assert "connected" not in result.output, result.output
    assert host.abstract.accepted == 0


def test_ssh_auth_sock_is_unset_and_the_agent_does_not_answer(host_rig: tuple[Rig, Host]) -> None:
    rig, host = host_rig
    probe = need_probe(rig)
    result = rig.run(f'echo "agent=[$SSH_AUTH_SOCK]"; {probe} connect {host.folder}/agent.sock')
    assert "agent=[]" in result.output and "connected" not in result.output, result.output
    assert host.agent.accepted == 0


def test_the_docker_socket_does_not_answer(rig: Rig) -> None:
    probe = need_probe(rig)
    if not Path("/var/run/docker.sock").is_socket():
        from support import require

        require("docker", False, "dockerd is not running here, so there is no /var/run/docker.sock to attack")
    result = rig.run(f"{probe} connect /var/run/docker.sock; {probe} connect /run/docker.sock")
    assert "connected" not in result.output, result.output


def test_swapping_a_folder_with_a_link_to_the_host_never_reaches_the_host(host_rig: tuple[Rig, Host]) -> None:
    """The supervisor (landlock) checks the inode it connects to, not a path: no swap can redirect it."""
    rig, host = host_rig
    probe = need_probe(rig)
    (rig.ws / "dir").mkdir()
    inside = UnixServer(str(rig.ws / "dir" / "host.sock"), reply=b"inside")  # the workspace's own server
    os.symlink(host.folder, rig.ws / "link")
    try:
        swap = f"{probe} swap dir link 0"
        loop = f"{probe} connect-loop dir/host.sock 400"
        if rig.shell.tasks is not None:  # the attack as it was found: the swapper in a background task
            task = rig.background(swap)
            result = rig.run(loop)
            rig.loop.run_until_complete(rig.shell.tasks.stop(task))
        else:
            result = rig.run(f"{swap} & {loop}; kill $!")
        assert "outside=0" in result.output, result.output
        assert host.server.accepted == 0
        if (rig.ws / "dir").is_symlink():  # the swapper stopped half way: put the folder back
            os.rename(rig.ws / "dir", rig.ws / "spare")
            os.rename(rig.ws / "link", rig.ws / "dir")
        legit = rig.run(f"{probe} connect dir/host.sock")
        assert "connected: inside" in legit.output, legit.output
    finally:
        inside.close()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # docker shares the host's netns then
def test_with_the_network_on_host_abstract_sockets_still_do_not_answer(backend: str, tmp_path: Path) -> None:
    """bwrap keeps the host's network namespace then: the Landlock scope (ABI 6+) is what keeps them away."""
    name = f"@kimi-attack-{secrets.token_hex(4)}"
    abstract = UnixServer(name)
    rig, _ = make_rig(tmp_path, backend, network=True)
    try:
        probe = need_probe(rig)
        result = rig.run(f"{probe} connect {name}")
        assert "connected" not in result.output, result.output
        assert abstract.accepted == 0
        legit_server_and_client(rig, probe)
    finally:
        rig.close()
        abstract.close()
