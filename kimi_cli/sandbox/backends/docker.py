"""DockerSandbox: one container per session, started on first use, removed at exit (or when kimi dies).

Nothing of the host is mounted but the workspace (and its .git/.kimi read-only): no host socket, no home.
The container's pid 1 reads its stdin, which kimi holds through an attach: when kimi dies, even by
SIGKILL, dockerd closes that stdin (StdinOnce), pid 1 exits, every process in the container dies with
it, and AutoRemove deletes the container. The seccomp profile is the one every backend uses
(restrict.py), in Docker's JSON form. /proc's host-wide corners (policy.PROC_READ_ONLY: sysctls, sysrq...)
are asked read-only by name and checked in the container's own mount table before the first command: a
root command that could write kernel.core_pattern would run a program on the host as real root.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import threading
import time
from typing import Any

from kimi_cli.kernel.contain import inside
from kimi_cli.kernel.restrict import Unavailable, docker_seccomp_profile, machine
from kimi_cli.sandbox.base import ExecResult, GuardedSandbox, OutputCollector
from kimi_cli.sandbox.env import SANE_PATH
from kimi_cli.sandbox.policy import PROC_READ_ONLY, SandboxPolicy
from kimi_cli.util.signals import alive

# Runs the command, then kills whatever it left behind (kill -1 spares the caller and pid 1, the keeper).
WRAPPER = '"$0" -c "$1"; rc=$?; kill -9 -1 2>/dev/null; exit $rc'
# pid 1 itself reads (no child that `kill -1` could take away); end of input: kimi is gone. It runs as a
# user no command runs as: a command of the same uid could open /proc/1/fd/0 for writing and hold the pipe
# open (pid 1 then never sees kimi go, and the container outlives a kill -9 of kimi), or write /proc/1/mem.
# Another uid without CAP_SYS_PTRACE closes /proc/1/fd and /proc/1/mem to it; commands get the image's user.
KEEPER = ["sh", "-c", "while read -r _; do :; done"]
KEEPER_USER = "2147483646:2147483646"
# Run once at start, as the commands' user: is bash there, which of PROC_READ_ONLY exist, and the mount table.
PROBE = (
    'command -v bash >/dev/null && echo shell=bash; for p; do [ -e "$p" ] && echo "exists=$p"; done; '
    "cat /proc/self/mountinfo"
)


def docker_client() -> Any:
    import docker  # heavy: only when the docker backend is used

    return docker.from_env(timeout=30)


PING_TIMEOUT = 5.0  # seconds for the engine's /_ping


def docker_works() -> tuple[bool, str]:
    """Whether the engine answers /_ping. The SDK costs ~0.35-1 s of imports (requests, urllib3, paramiko's
    shim), so a plain engine address (a unix socket, or tcp without TLS: what docker.from_env reads from
    DOCKER_HOST) is asked with the standard library; ssh:// and TLS go through the SDK, which handles them."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    plain = not os.environ.get("DOCKER_TLS_VERIFY") and host.startswith(("unix://", "tcp://", "http://"))
    try:
        if plain:
            _ping(host)
        else:
            docker_client().ping()
    except Exception as exc:
        return False, f"the Docker engine does not answer ({type(exc).__name__})"
    return True, ""


def _ping(host: str) -> None:
    """GET /_ping on the engine at `host` (unix:// or tcp://); raises unless it answers 200 OK."""
    import socket
    from urllib.parse import urlsplit

    if host.startswith("unix://"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(PING_TIMEOUT)
        address: Any = host.removeprefix("unix://")
    else:
        parts = urlsplit(host)
        sock = socket.socket(socket.AF_INET6 if ":" in (parts.hostname or "") else socket.AF_INET)
        sock.settimeout(PING_TIMEOUT)
        address = (parts.hostname or "localhost", parts.port or 2375)
    with sock:
        sock.connect(address)
        sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        answer = b""
        while len(answer) < 4096 and (chunk := sock.recv(4096)):
            answer += chunk
    status = answer.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200":
        raise ConnectionError(answer[:80].decode("latin-1", "replace"))


def container_options(policy: SandboxPolicy, image: str, memory: str, pids_limit: int, session: str) -> dict[str, Any]:
    """The keyword arguments for containers.run; a pure function so the policy mapping is testable."""
    ws = str(policy.workspace)
    volumes = {ws: {"bind": ws, "mode": "rw"}}
    for path in policy.read_only:
        volumes[str(path)] = {"bind": str(path), "mode": "ro"}
    tmpfs = {"/tmp": "rw,exec,nosuid,size=1g"}
    masks: list[str] = []
    for hidden in policy.hidden:  # only those inside the workspace: nothing else is mounted
        if inside(hidden.path, policy.workspace):
            if hidden.is_dir:
                tmpfs[str(hidden.path)] = "ro,size=4k"
            else:
                masks.append(str(hidden.path))
    security = ["no-new-privileges"]
    with contextlib.suppress(Unavailable):  # else Docker's default profile
        security.append("seccomp=" + docker_seccomp_profile(machine()))
    return {
        "image": image,
        "command": KEEPER,
        "stdin_open": True,
        "stdin_once": True,
        "auto_remove": True,
        "name": f"kimi-{session}-{secrets.token_hex(3)}",
        "labels": {"kimi.session": session, "kimi.pid": str(os.getpid())},
        "network_mode": "host" if policy.network else "none",
        "mem_limit": memory,
        "pids_limit": pids_limit,
        "volumes": volumes,
        "masks": masks,  # files covered with /dev/null
        "working_dir": "/",  # the keeper's uid may not enter the workspace; each exec names it
        "user": KEEPER_USER,
        "read_only": True,
        "tmpfs": tmpfs,
        "cap_drop": ["ALL"],
        "security_opt": security,
        "environment": {"PATH": SANE_PATH, "HOME": "/root", "LANG": "C.UTF-8"},
        # Docker's default list, named so that no daemon default or option can drop one (see PROBE).
        "readonly_paths": list(PROC_READ_ONLY),
    }


class DockerSandbox(GuardedSandbox):
    """Commands run through `docker exec` in a long-lived, locked-down container."""

    name = "docker"

    def __init__(
        self, policy: SandboxPolicy, output_cap: int, image: str, memory: str, pids_limit: int, session: str
    ) -> None:
        self.policy = policy
        self.output_cap = output_cap
        self.options = container_options(policy, image, memory, pids_limit, session)
        self._client: Any = None
        self._container: Any = None
        self._lifeline: Any = None  # the attach to pid 1's stdin: closes when kimi dies
        self._shell = "sh"
        self._user = "0"  # the image's own user, for every exec (see KEEPER_USER)

    @property
    def container_id(self) -> str | None:
        return self._container.id if self._container is not None else None

    def _ensure(self) -> Any:
        if self._container is None:
            import docker.errors

            self._client = docker_client()
            reap_orphans(self._client)
            try:
                container = create_container(self._client, self.options)
            except docker.errors.ImageNotFound:
                raise RuntimeError(
                    f"docker image {self.options['image']!r} is not available locally; build or pull it, "
                    "or set sandbox.docker_image in .kimi/config.toml"
                ) from None
            self._lifeline = self._client.api.attach_socket(container.id, params={"stdin": 1, "stream": 1})
            try:
                container.start()
                self._user = image_user(self._client, self.options["image"])
                probe = self._client.api.exec_create(container.id, ["sh", "-c", PROBE, "sh", *PROC_READ_ONLY],
                                                     user=self._user)  # fmt: skip
                found = self._client.api.exec_start(probe["Id"]).decode("utf-8", "replace")
                writable = proc_left_writable(found)
                if writable:
                    raise RuntimeError(
                        f"the docker engine left {', '.join(writable)} writable in the container; kimi runs no "
                        "command there (a privileged daemon default or systempaths=unconfined?)"
                    )
            except BaseException:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
                with contextlib.suppress(Exception):
                    self._lifeline.close()
                self._lifeline = None
                raise
            self._container = container
            if "shell=bash" in found.splitlines():
                self._shell = "bash"
        return self._container

    async def run(self, command: str, timeout: float) -> ExecResult:
        return await self.guarded(lambda: self._run(command, timeout))  # .git/.kimi checks: base.GuardedSandbox

    async def _run(self, command: str, timeout: float) -> ExecResult:
        started = time.monotonic()
        await asyncio.to_thread(self._ensure)
        api = self._client.api
        exec_id = api.exec_create(
            self._container.id, ["sh", "-c", WRAPPER, self._shell, command], workdir=str(self.policy.workspace),
            user=self._user,
        )["Id"]  # fmt: skip
        collector = OutputCollector(self.output_cap)
        done = threading.Event()

        def pump() -> None:
            try:
                for chunk in api.exec_start(exec_id, stream=True):
                    collector.feed(chunk)
            finally:
                done.set()

        reader = asyncio.ensure_future(asyncio.to_thread(pump))
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(reader), timeout)
        except TimeoutError:
            timed_out = True
        finally:
            if not done.is_set():
                await asyncio.to_thread(self._kill_all)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(reader, 10)
        code = None if timed_out else api.exec_inspect(exec_id).get("ExitCode")
        text, cut = collector.result()
        return ExecResult(text, code, timed_out, time.monotonic() - started, cut)

    def _kill_all(self) -> None:
        with contextlib.suppress(Exception):
            kid = self._client.api.exec_create(self._container.id, ["sh", "-c", "kill -9 -1"], user=self._user)
            self._client.api.exec_start(kid["Id"])

    async def close(self) -> None:
        await asyncio.to_thread(self.close_sync)

    def close_sync(self) -> None:
        if self._container is not None:
            with contextlib.suppress(Exception):
                self._container.remove(force=True)
            self._container = None
        if self._lifeline is not None:
            with contextlib.suppress(Exception):
                self._lifeline.close()
            self._lifeline = None
        self.close_guard()


HOST_KEYS = ("network_mode", "mem_limit", "pids_limit", "read_only", "tmpfs", "cap_drop", "security_opt", "auto_remove")


def proc_left_writable(probe_output: str) -> list[str]:
    """Of the PROC_READ_ONLY paths the probe found, those on a writable mount, or with one beneath them."""
    existing = [line[len("exists=") :] for line in probe_output.splitlines() if line.startswith("exists=")]
    read_only: dict[str, bool] = {}
    for line in probe_output.splitlines():
        fields = line.split()
        if len(fields) > 5 and (fields[4] == "/proc" or fields[4].startswith("/proc/")):
            read_only[fields[4]] = "ro" in fields[5].split(",")  # a later line is mounted over an earlier one

    def covering(path: str) -> bool:  # the innermost mount that holds the path
        holders = [at for at in read_only if inside(path, at)]
        return bool(holders) and read_only[max(holders, key=len)]

    return [p for p in existing if not covering(p) or not all(ro for at, ro in read_only.items() if inside(at, p))]


def create_container(client: Any, options: dict[str, Any]) -> Any:
    """Create (not start) the container through the low-level API: the high-level one has no stdin_once."""
    api = client.api
    binds = [f"{host}:{v['bind']}:{v['mode']}" for host, v in options["volumes"].items()]
    binds += [f"/dev/null:{path}:ro" for path in options["masks"]]
    host = api.create_host_config(binds=binds, **{k: options[k] for k in HOST_KEYS})
    host["ReadonlyPaths"] = options["readonly_paths"]  # docker-py has no keyword for it; the API has the field
    created = api.create_container(
        options["image"], options["command"], name=options["name"], labels=options["labels"], user=options["user"],
        working_dir=options["working_dir"], environment=options["environment"], host_config=host,
        stdin_open=options["stdin_open"], detach=not options["stdin_once"],  # docker-py: StdinOnce = not detach
    )  # fmt: skip
    return client.containers.get(created["Id"])


def image_user(client: Any, image: str) -> str:
    """The user the image names (Config.User), root when it names none: what commands run as."""
    try:
        user = client.images.get(image).attrs.get("Config", {}).get("User") or ""
    except Exception:
        user = ""
    return user or "0"


def reap_orphans(client: Any) -> None:
    """Remove containers left by kimi processes that died without cleaning up (SIGKILL, power loss)."""
    with contextlib.suppress(Exception):
        for container in client.containers.list(all=True, filters={"label": "kimi.pid"}):
            pid = int(container.labels.get("kimi.pid", "0"))
            if pid and not alive(pid):
                container.remove(force=True)
