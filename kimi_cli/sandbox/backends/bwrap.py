"""BwrapSandbox: bubblewrap namespaces enforce the policy; one pure function builds the argv.

Host sockets: /run (and /var/run where it is a folder) is an empty tmpfs, /tmp is the private tmp, /dev
is bwrap's own, and every other listening unix socket the kernel listed at session start is covered by
/dev/null. Abstract sockets live in the network namespace: with the network off there is a new one;
with it on, a Landlock scope (ABI 6+) keeps them out of reach. The seccomp program shared with the
landlock backend (restrict.py) goes in with --seccomp: no setuid bits, no new namespaces, no TIOCSTI.

Nothing outlives kimi or its command. bwrap's --die-with-parent alone does not ensure that: its pid 1
sets PR_SET_PDEATHSIG only once it runs, and on a loaded machine the command starts first; if kimi dies
(or a timeout kills the outer bwrap) in that window, pid 1 is handed to the host's init and the command
runs on. So every command also gets a lifeline: its standard input is the read end of a pipe whose only
write end kimi holds. A watcher, the first thing started in the sandbox, waits on it; when kimi closes the
write end (the command is over or timed out, the task stopped) or dies, it kills every process in the
sandbox's pid namespace, and bwrap's pid 1 exits with them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from kimi_cli.hostsafe.programs import host_which
from kimi_cli.kernel.contain import inside, inside_any
from kimi_cli.kernel.restrict import Unavailable, machine, seccomp_program
from kimi_cli.sandbox.base import ExecResult, GuardedSandbox, Started, run_process_group
from kimi_cli.sandbox.policy import PROC_READ_ONLY, HiddenPath, SandboxPolicy, current_hidden, host_sockets

MASKED_DIRS = ("/run", "/var/run")


def host_masks() -> tuple[list[str], list[str]]:
    """(folders to cover with a tmpfs, files under them to bind back): /run, /var/run where it is a folder,
    and systemd-resolved's resolv.conf when /etc/resolv.conf links into /run (DNS with the network on)."""
    folders = [d for d in MASKED_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    resolv = os.path.realpath("/etc/resolv.conf")
    keep = [resolv] if inside_any(resolv, MASKED_DIRS) and os.path.isfile(resolv) else []
    return folders, keep


def _covered(path: Path, policy: SandboxPolicy, folders: list[str]) -> bool:
    covered = [Path(d) for d in (*MASKED_DIRS, *folders, "/tmp", "/dev")] + [h.path for h in policy.hidden]
    return inside_any(path, covered)


def bwrap_argv(
    policy: SandboxPolicy,
    command: list[str],
    bwrap: str = "bwrap",
    seccomp_fd: int | None = None,
    masks: tuple[list[str], list[str]] | None = None,
) -> list[str]:
    """The exact bwrap command line for a policy. Order matters: later mounts cover earlier ones."""
    ws = str(policy.workspace)
    folders, keep = host_masks() if masks is None else masks
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # Bound read-only by us, whatever bwrap decides: it covers such folders only when access(W_OK) passes, and
    # /proc/sys (0555) fails that even for root, whose sysctl writes check only euid 0 (a root command wrote
    # core_pattern, and the host kernel ran a workspace script as real root). The source is kimi's /proc: a
    # sysctl answers for the namespaces of whoever reads it, so the sandbox still sees its own there.
    for corner in PROC_READ_ONLY:  # -try: a kernel may lack one (no sysrq, no /proc/bus)
        argv += ["--ro-bind-try", corner, corner]
    for folder in folders:  # the docker socket, D-Bus, systemd, and the user's runtime dir
        argv += ["--tmpfs", folder]
    for kept in keep:
        argv += ["--ro-bind", kept, kept]
    argv += ["--bind", str(policy.private_tmp), "/tmp"]
    argv += ["--bind", ws, ws]
    for path in policy.writable:
        argv += ["--bind", str(path), str(path)]
    for path in policy.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for hidden in policy.hidden:
        if not inside(hidden.path, ws) and inside_any(hidden.path, (*folders, "/tmp")):
            continue  # already covered by an empty tmpfs or the private /tmp
        if hidden.is_dir:
            argv += ["--tmpfs", str(hidden.path), "--remount-ro", str(hidden.path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(hidden.path)]
    for sock in policy.sockets:  # listening elsewhere (/var/lib/..., a home folder): covered one by one
        if not _covered(sock, policy, folders):
            argv += ["--ro-bind-try", "/dev/null", str(sock)]
    if not policy.network:
        argv.append("--unshare-net")
    # As root, bwrap keeps capabilities unless dropped: without --cap-drop ALL, `mount -o remount,rw /` works.
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--clearenv"]
    for key in sorted(policy.env):
        argv += ["--setenv", key, policy.env[key]]
    argv += ["--chdir", ws, "--", *command]
    return argv


def with_lifeline(shell: str, command: str) -> list[str]:
    """`shell -c command` behind a watcher that reads its standard input (the lifeline: a pipe's read end)
    until it closes and then kills every process in the sandbox (kill -1 reaches only the pid namespace's
    own). /bin/sh starts it, gives the command /dev/null as its input as before, and becomes the shell: the
    command sees no extra fd and no change to $0, its arguments or its exit status."""
    watcher = 'exec 3<&0 </dev/null; { read -r x <&3; kill -9 -1; } >/dev/null 2>&1 & exec 3<&-; exec "$0" -c "$1"'
    return ["/bin/sh", "-c", watcher, shell, command]


def _scope_preexec(policy: SandboxPolicy, exe: str) -> Callable[[], None] | None:
    """With the network on, a Landlock scope keeps the host's abstract unix sockets (X11, containerd-shim)
    and signals to outside processes away from the command; off, the new network namespace does."""
    if not policy.network or os.stat(exe).st_mode & 0o4000:  # a setuid bwrap would refuse no_new_privs
        return None
    from kimi_cli.kernel.restrict import create_ruleset, enter_domain, landlock_abi
    from kimi_cli.kernel.rights import SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL

    abi = landlock_abi()
    if abi < 6:
        return None
    fd = create_ruleset(abi, 0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, [])  # close-on-exec: bwrap never sees it
    return lambda: enter_domain(fd)


def _folders_stamp(patterns: tuple[str, ...]) -> tuple[int | None, ...] | None:
    """The change times of the folders the hidden patterns live in (a new entry changes its folder's);
    None when a pattern's folder itself holds a glob (then the table is always matched again)."""
    folders = sorted({os.path.dirname(p) for p in patterns})
    if any(c in folder for folder in folders for c in "*?["):
        return None
    out: list[int | None] = []
    for folder in folders:
        try:
            out.append(os.stat(folder).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def _as_they_are(hidden: tuple[HiddenPath, ...]) -> tuple[HiddenPath, ...]:
    """The hidden entries as the file system has them now (a stat each): one removed since is left out, as
    bwrap would have to make its mount point on the read-only root and fail the command ("Can't mkdir"),
    and one whose kind changed is covered as what it is now. A removed one that comes back is covered again."""
    out: list[HiddenPath] = []
    for entry in hidden:
        try:
            is_dir = stat.S_ISDIR(os.stat(entry.path).st_mode)
        except (OSError, ValueError):
            continue  # gone (or unreadable to stat, as before: then nothing of it can be read either)
        out.append(entry if is_dir == entry.is_dir else HiddenPath(entry.path, is_dir))
    return tuple(out)


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class BwrapSandbox(GuardedSandbox):
    """Runs each command in a fresh bubblewrap sandbox; the process group dies on timeout."""

    name = "bwrap"

    def __init__(self, policy: SandboxPolicy, output_cap: int, shell: str = "bash") -> None:
        self.policy = policy
        self.output_cap = output_cap
        self.shell = shell
        # Never a bwrap from a folder commands can write (a project's .venv/bin on PATH): see hostsafe.programs.
        self.exe = host_which("bwrap", (policy.workspace, policy.private_tmp)) or "/nonexistent/bwrap"
        try:
            # inet sockets stay allowed: with the network off they live in bwrap's empty network namespace,
            # where a test suite's own loopback server still works.
            self.program: bytes | None = seccomp_program(machine(), network=True, host_ns=False)
        except Unavailable:
            self.program = None
        self.preexec = _scope_preexec(policy, self.exe) if os.path.isfile(self.exe) else None
        self._hidden_stamp: tuple[int | None, ...] | None = _folders_stamp(policy.hidden_patterns)
        self._late_hidden: tuple[HiddenPath, ...] = ()

    def _program_fd(self) -> int | None:
        """A pipe holding the seccomp program (bwrap reads it to the end); the caller closes it."""
        if self.program is None:
            return None
        read, write = os.pipe()
        os.write(write, self.program)
        os.close(write)
        return read

    def argv(self, command: str, seccomp_fd: int | None, lifeline: bool = False) -> list[str]:
        """With `lifeline`, the command's standard input must be the read end of its lifeline pipe."""
        inner = with_lifeline(self.shell, command) if lifeline else [self.shell, "-c", command]
        return bwrap_argv(self._now(), inner, self.exe, seccomp_fd)

    def _now(self) -> SandboxPolicy:
        """The policy with the hidden table and the host's listening sockets looked up again: a credential
        file made since the session began (`gh auth login` in another terminal), or a socket bound since
        (a daemon started later), is covered for the next command too. The table is matched again only when
        a folder its entries live in has changed (a stat each, ~0.2 ms; a full match costs ~2 ms)."""
        policy = self.policy
        stamp = _folders_stamp(policy.hidden_patterns)
        if stamp is None or stamp != self._hidden_stamp:
            known = {h.path for h in policy.hidden}
            fresh = [h for h in current_hidden(policy.hidden_patterns, policy.workspace) if h.path not in known]
            self._late_hidden, self._hidden_stamp = tuple(fresh), stamp
        inside = [policy.workspace, policy.private_tmp.resolve()]
        fresh_sockets = [s for s in host_sockets(inside) if s not in policy.sockets]
        # A socket of the session's start that is gone now (its server stopped, its folder removed) is left
        # out too: bwrap would have to make its mount point, and fail the command ("Can't mkdir parents").
        sockets = (*(s for s in policy.sockets if _is_socket(s)), *fresh_sockets)
        hidden = _as_they_are((*policy.hidden, *self._late_hidden))
        if hidden == policy.hidden and sockets == policy.sockets:
            return policy
        return dataclasses.replace(policy, hidden=hidden, sockets=sockets)

    async def run(self, command: str, timeout: float) -> ExecResult:
        return await self.guarded(lambda: self._run(command, timeout))  # .git/.kimi checks: base.GuardedSandbox

    async def _run(self, command: str, timeout: float) -> ExecResult:
        fd = self._program_fd()
        life_r, life_w = os.pipe()
        try:
            result = await run_process_group(
                self.argv(command, fd, lifeline=True), cwd=str(self.policy.workspace), env=self.policy.env,
                timeout=timeout, cap=self.output_cap, pass_fds=() if fd is None else (fd,), preexec_fn=self.preexec,
                stdin=life_r,
            )  # fmt: skip
        finally:
            for own in (life_r, life_w) if fd is None else (fd, life_r, life_w):
                os.close(own)  # the write end last: whatever the command left running is killed
        return result

    async def start(self, command: str) -> Started:
        """A background command: the same sandbox, left running; its lifeline ties it to kimi."""
        self.start_guard()
        fd = self._program_fd()
        life_r, life_w = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv(command, fd, lifeline=True), cwd=str(self.policy.workspace), env=self.policy.env,
                stdin=life_r, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, preexec_fn=self.preexec, pass_fds=() if fd is None else (fd,),
            )  # fmt: skip
        except BaseException:
            os.close(life_w)
            raise
        finally:
            os.close(life_r)
            if fd is not None:
                os.close(fd)
        started = Started.from_process(proc)
        started.lifeline = life_w  # closed when the task ends or is stopped, and by the kernel if kimi dies
        return started

    def spawn_spec(self, command: str) -> tuple[list[str], dict[str, str], Callable[[], None] | None, tuple[int, ...]]:
        """For a background task or a reader: the same sandbox, started by the caller and left running.

        The seccomp program travels in a pipe whose read end is in the returned pass_fds; the caller must
        close it once the process has started (bwrap has read it by then or holds its own copy).
        """
        self.start_guard()
        fd = self._program_fd()
        return self.argv(command, fd), self.policy.env, self.preexec, () if fd is None else (fd,)

    async def close(self) -> None:
        self.close_sync()

    def close_sync(self) -> None:
        self.close_guard()


def bwrap_works(policy: SandboxPolicy) -> tuple[bool, str]:
    """Try the real thing once: some kernels or containers forbid the namespaces bwrap needs."""
    exe = host_which("bwrap", (policy.workspace, policy.private_tmp))
    if exe is None:
        return False, "bwrap is not installed (outside the workspace)"
    sandbox = BwrapSandbox(policy, 1000)
    fd = sandbox._program_fd()
    try:
        out = subprocess.run(
            bwrap_argv(policy, ["true"], exe, fd), capture_output=True, text=True, timeout=20, env=policy.env,
            pass_fds=() if fd is None else (fd,), preexec_fn=sandbox.preexec,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bwrap failed to start: {exc}"
    finally:
        if fd is not None:
            os.close(fd)
    if out.returncode != 0:
        return False, f"bwrap cannot create a sandbox here: {out.stderr.strip()[:300]}"
    return True, ""
