"""A throwaway folder in which real bash runs command lines and every program it starts is recorded: for the
differential test of the shell reading (tests/attacks/rules/test_bash_differential.py).

bin/ holds PATH shims (a small C program per name that logs its session and name, then execs the real
program from real/ for wrappers such as env and xargs, else exits 0). A batch of lines runs under one C
runner, one line at a time: each line is `bash -c LINE` in a session of its own, with the runner as child
subreaper, so the runner waits for everything the line left in the background (or kills its process group
after a bound) before it starts the next. That is exact (no polling of /proc) and cheap (one fork and exec of
bash a line, no Python per line). Where strace exists, the whole batch also runs under an exec trace
(`--seccomp-bpf`: only execve and the runner's markers stop), which sees programs started by any path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SHIM_C = r"""
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* Logs its session and its own name to ../log beside the folder it lives in (whatever the environment says),
   then runs the real program of that name from ../real when there is one (wrappers), else exits 0. */
int main(int argc, char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = 0;
    char *name = strrchr(self, '/');
    *name++ = 0;
    char *dir = strrchr(self, '/');
    if (dir) *dir = 0;
    snprintf(path, sizeof path, "%s/log", self);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) { dprintf(fd, "%d %s\n", (int)getsid(0), name); close(fd); }
    snprintf(path, sizeof path, "%s/real/%s", self, name);
    if (access(path, X_OK) == 0) { argv[0] = path; execv(path, argv); }
    return 0;
}
"""

RUNNER_C = r"""
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
/* runner LINES LOG: runs each NUL-ended line of LINES as `bash -c LINE` (stdin, stdout, stderr /dev/null) in a
   session of its own, waits for every process the line started (this runner is their subreaper), appends
   "--- SID STATUS" to LOG after each line and calls truncate("/kimi-diff-mark/I") before each one, which an
   exec trace sees as the line's start. STATUS: done, or killed (the line's group outlived the bound). */
static volatile sig_atomic_t fired;
static void on_alarm(int sig) { (void)sig; fired = 1; }
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);  /* no SA_RESTART: waitpid returns EINTR */
    int in = open(argv[1], O_RDONLY);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) return 2;
    char *text = malloc(st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(in, text + got, st.st_size - got);
        if (n <= 0) return 2;
        got += n;
    }
    text[got] = 0;
    int log = open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0600);
    char mark[64];
    size_t at = 0;
    for (int i = 0; at < got; i++) {
        char *line = text + at;
        at += strlen(line) + 1;
        snprintf(mark, sizeof mark, "/kimi-diff-mark/%d", i);
        (void)truncate(mark, 0);
        pid_t child = fork();
        if (child == 0) {
            setsid();
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0); dup2(null, 1); dup2(null, 2);
            if (null > 2) close(null);
            close(log);
            execl("/bin/bash", "bash", "-c", line, (char *)NULL);
            _exit(127);
        }
        const char *status = "done";
        fired = 0;
        alarm(5);
        int stage = 0;
        for (;;) {
            pid_t done = waitpid(-1, NULL, 0);
            if (done > 0) continue;
            if (errno == ECHILD) break;
            if (errno == EINTR && fired) {
                fired = 0;
                status = "killed";
                if (stage++ > 0) break;  /* something escaped the group: go on without it */
                kill(-child, SIGKILL);
                alarm(1);
            }
        }
        alarm(0);
        dprintf(log, "--- %d %s\n", (int)child, status);
    }
    return 0;
}
"""

LEAVES = ["rm", "touch", "cat", "ls", "grep", "sed", "awk", "git", "make", "curl", "python3", "echo", "id"]
# Real programs, behind a logging shim: they start others (find -exec, and the found files themselves).
WRAPPERS = ["env", "nice", "timeout", "nohup", "xargs", "bash", "sh", "find"]
STRACE = shutil.which("strace")


@dataclass
class Lab:
    """One worker's throwaway folder: bin/ (the shims), real/ (the wrapped programs), runner, log, work/."""

    root: Path
    can_trace: bool = False  # strace exists and works here (a container may refuse ptrace)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def env(self) -> dict[str, str]:
        return {"PATH": str(self.bin), "HOME": str(self.root / "work"), "LANG": "C", "x": "", "P": "r"}

    def run_batch(self, lines: list[str], trace: bool = True) -> list[set[str]]:
        """For each line, the names of the programs bash started for it: the shims' log, and the exec trace
        (`trace`, where it works)."""
        if not lines:
            return []
        log, trace_file, batch = self.root / "log", self.root / "trace", self.root / "lines"
        log.write_text("")
        trace_file.unlink(missing_ok=True)
        batch.write_bytes(b"".join(line.encode() + b"\0" for line in lines))
        argv = [str(self.root / "runner"), str(batch), str(log)]
        if trace and self.can_trace and STRACE:
            argv = [STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve,execveat,truncate",
                    "-e", "signal=none", "-o", str(trace_file), *argv]  # fmt: skip
        subprocess.run(argv, cwd=self.root / "work", env=self.env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       timeout=30 + 7 * len(lines))  # fmt: skip
        started = _logged(log.read_text(), len(lines))
        if trace_file.exists():
            for i, names in enumerate(_traced(trace_file.read_text(), self.root, len(lines))):
                started[i] |= names
        return started

    def run(self, line: str, trace: bool = True) -> set[str]:
        return self.run_batch([line], trace)[0]


def _logged(text: str, count: int) -> list[set[str]]:
    """The shims' log cut at the runner's separators; a line's entries are those of its own session."""
    result: list[set[str]] = []
    pending: list[tuple[str, str]] = []
    for entry in text.splitlines():
        if entry.startswith("--- "):
            sid = entry.split()[1]
            result.append({name for s, name in pending if s == sid})
            pending = []
        else:
            sid, _, name = entry.partition(" ")
            pending.append((sid, name))
    assert len(result) == count, f"the runner ran {len(result)} of {count} lines"
    return result


def _traced(text: str, root: Path, count: int) -> list[set[str]]:
    """Per line, the programs the trace shows started (an execve that returned 0), cut at the runner's
    markers; not the line's own bash (its first exec) and not the real programs behind shims (logged by
    name already)."""
    result: list[set[str]] = []
    current: list[str] | None = None
    pending: dict[str, str] = {}
    for entry in text.splitlines():
        pid, _, rest = entry.partition(" ")
        rest = rest.lstrip()
        if rest.startswith('truncate("/kimi-diff-mark/'):
            if current is not None:
                result.append(_names(current, root))
            current = []
            continue
        if current is None:
            continue  # the runner's own start
        if rest.startswith(("execve(", "execveat(")):
            path = rest.split('"', 2)[1] if '"' in rest else ""
            if rest.rstrip().endswith("= 0"):
                current.append(path)
            elif "<unfinished ...>" in rest:
                pending[pid] = path
        elif "<... execve" in rest and rest.rstrip().endswith("= 0") and pid in pending:
            current.append(pending.pop(pid))
    if current is not None:
        result.append(_names(current, root))
    assert len(result) == count, f"the trace shows {len(result)} of {count} lines"
    return result


def _names(paths: list[str], root: Path) -> set[str]:
    real = str(root / "real") + "/"
    return {os.path.basename(p) for p in paths[1:] if not p.startswith(real)}


def _compile(source: str, out: Path) -> None:
    c = out.with_suffix(".c")
    c.write_text(source)
    # Static where the C library allows: a shim starts several times a line, and no loader halves its cost.
    if subprocess.run(["cc", "-O2", "-static", "-o", str(out), str(c)], capture_output=True).returncode != 0:
        subprocess.run(["cc", "-O2", "-o", str(out), str(c)], check=True, capture_output=True)


def make_lab(folder: Path) -> Lab:
    lab = Lab(folder)
    for sub in ("bin", "real", "work"):
        (folder / sub).mkdir(parents=True)
    _compile(SHIM_C, folder / "shim")
    _compile(RUNNER_C, folder / "runner")
    for name in LEAVES + WRAPPERS:
        shutil.copy2(folder / "shim", folder / "bin" / name)  # a copy each: /proc/self/exe names it
    for name in WRAPPERS:
        real = "/bin/bash" if name == "bash" else shutil.which(name, path="/usr/bin:/bin")
        assert real, name
        (folder / "real" / name).symlink_to(real)
    script = folder / "work" / "a.sh"  # a script bash may source, and a program find may run
    script.write_text("touch from_script\n")
    script.chmod(0o755)
    if STRACE:  # strace needs ptrace (a container may refuse it): without it the shims alone see
        probe = subprocess.run([STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-o", os.devnull,
                                "/bin/true"], capture_output=True)  # fmt: skip
        lab.can_trace = probe.returncode == 0
    return lab
