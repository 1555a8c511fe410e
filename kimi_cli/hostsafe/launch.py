"""Starting a program on the host so that nothing it starts outlives kimi.

kimi starts long-lived programs on the host: stdio MCP servers (kimi_cli.extensions.mcp.manager) and
the sandboxes of language servers and of sandboxed MCP servers (kimi_cli.sandbox.long_lived). Each gets a
session of its own, so a program that ignores the end of its stdin kept running under init when kimi died
without closing it (SIGTERM to `kimi acp`, a watchdog exit, SIGKILL). Each now runs under a small launcher
whose parent-death signal takes the program's whole process group down with kimi. The launcher serves every
extension that starts a program, so it lives here, below them all.
"""

from __future__ import annotations

import os

# The launcher: leader of the server's process group (the SDK gives it a session of its own), a child of kimi's
# MCP thread. It asks the kernel for SIGTERM when that thread or kimi dies (PR_SET_PDEATHSIG), runs the server
# as its child, and on SIGTERM (kimi gone, or the SDK stopping the group) ends the whole group: SIGTERM, then
# SIGKILL after a grace. Otherwise it exits with the server's status. Standard library only, no site (-I -S).
LAUNCHER = r"""
import ctypes, os, signal, sys, time
kimi, argv = int(sys.argv[1]), sys.argv[2:]
def end(*_):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            if os.waitpid(child, os.WNOHANG)[0]:
                break
        except ChildProcessError:
            break
        time.sleep(0.05)
    os.killpg(0, signal.SIGKILL)
child = 0
signal.signal(signal.SIGTERM, end)
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != kimi:  # kimi died before the request took hold
    os.killpg(0, signal.SIGKILL)
child = os.fork()
if child == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, ("kimi: cannot start %s: %s\n" % (argv[0], exc.strerror)).encode())
        os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0), os.dup2(null, 1)  # the server's pipes are its own: the SDK sees them close when it exits
status = os.waitpid(child, 0)[1]
os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


def supervised(command: str, args: list[str], cwd: str | None = None) -> tuple[str, list[str]]:
    """The argv that starts `command args` under the launcher (Linux; elsewhere the command as it is). A
    program that cannot be started fails here, as a direct start would (FileNotFoundError, PermissionError)."""
    import errno
    import sys

    path = os.path.join(cwd or "", command)
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    if not sys.platform.startswith("linux"):
        return command, args
    return sys.executable, ["-I", "-S", "-c", LAUNCHER, str(os.getpid()), command, *args]
