"""A real terminal for tests: `kimi` in a pty (pexpect), its output fed to a VT emulator (pyte) that
answers cursor-position requests as a terminal does, so prompt_toolkit draws everything it would draw
for a user (the status line included) and tests read the screen as the user would see it.

    term = Terminal.start(repo, env, server, cols=60)
    term.wait_for("❯")
    term.send("hello\r")
    term.wait_for("answer")        # on the screen now
    assert "esc to interrupt" in term.transcript  # anywhere in everything printed so far
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest

from support import TEST_KEY, kimi_executable

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMc]|[\x08\r]")
ROWS = 40


class _Screen(pyte.HistoryScreen):
    """pyte's screen, answering the child's queries (CPR) on the pty like a real terminal."""

    child: Any = None

    def write_process_input(self, data: str) -> None:
        if self.child is not None and self.child.isalive():
            self.child.send(data)


class Terminal:
    def __init__(self, child: Any, cols: int, rows: int) -> None:
        self.child = child
        self.cols = cols
        self.screen = _Screen(cols, rows, history=10_000)
        self.screen.child = child
        self.stream = pyte.Stream(self.screen)
        self.raw: list[str] = []
        self.logfile_read: Any = None  # like pexpect's: gets every chunk read
        self.before = ""  # like pexpect's: the output between the last two expect() matches
        self._seen = 0  # where the next expect() starts looking in the transcript

    @classmethod
    def start(
        cls, repo: Path, env: dict[str, str], server: Any, *args: str, cols: int = 120, rows: int = ROWS,
        base_url: str | None = None, extra_env: dict[str, str] | None = None,
    ) -> Terminal:  # fmt: skip
        full = {
            **env,
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "KIMI_PROVIDER": "openai",
            "KIMI_API_KEY": TEST_KEY,
            "KIMI_BASE_URL": base_url or (server.base_url if server is not None else ""),
            "PAGER": "cat",
            **(extra_env or {}),
        }
        exe = kimi_executable()
        child = pexpect.spawn(exe[0], [*exe[1:], *args], cwd=str(repo), env=full, dimensions=(rows, cols),
                              encoding="utf-8", codec_errors="replace", timeout=30)  # fmt: skip
        return cls(child, cols, rows)

    # --- reading -----------------------------------------------------------------------------------------

    def pump(self, wait: float = 0.05) -> bool:
        """Read what the child printed (waiting up to `wait`); False once it has exited and nothing is left."""
        try:
            data = self.child.read_nonblocking(65536, timeout=wait)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw.append(data)
        self.stream.feed(data)
        if self.logfile_read is not None:
            self.logfile_read.write(data)
        return True

    @property
    def display(self) -> str:
        """The screen now, one line per row, trailing blanks removed."""
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip("\n")

    @property
    def transcript(self) -> str:
        """Everything printed so far as plain text (escape sequences removed), for `in` checks."""
        return ANSI.sub("", "".join(self.raw))

    @property
    def scrollback(self) -> str:
        """The lines that scrolled off the top, then the screen: what the user can scroll through."""
        cols = self.cols
        old = ["".join(line[x].data for x in range(cols)).rstrip() for line in self.screen.history.top]
        return "\n".join([*old, self.display])

    def wait_for(self, pattern: str, timeout: float = 30.0, regex: bool = False) -> str:
        """Until `pattern` is on the screen; returns the screen."""
        deadline = time.monotonic() + timeout
        found = re.compile(pattern) if regex else None

        def seen() -> bool:
            return bool(found.search(self.display)) if found is not None else pattern in self.display

        while not seen():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g} s waiting for {pattern!r} on the screen:\n{self.display}")
            if not self.pump(0.1) and not seen():
                pytest.fail(f"kimi exited while waiting for {pattern!r}; the screen:\n{self.display}")
        return self.display

    def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        """Until `text` has been printed at all (it may have scrolled off since)."""
        deadline = time.monotonic() + timeout
        while text not in self.transcript:
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g} s waiting for {text!r}; the screen:\n{self.display}")
            if not self.pump(0.1) and text not in self.transcript:
                pytest.fail(f"kimi exited while waiting for {text!r}; the screen:\n{self.display}")

    def wait_count(self, text: str, count: int, timeout: float = 30.0) -> None:
        """Until `text` has been printed `count` times in all (a panel printed once per question, say)."""
        deadline = time.monotonic() + timeout
        while self.transcript.count(text) < count:
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {text!r} to be printed {count} times; the screen:\n{self.display}")
            if not self.pump(0.1) and self.transcript.count(text) < count:
                pytest.fail(f"kimi exited while waiting for {text!r}; the screen:\n{self.display}")

    def settle(self, quiet: float = 0.4, timeout: float = 10.0) -> str:
        """Until the screen stops changing for `quiet` seconds (the spinner aside)."""
        deadline = time.monotonic() + timeout
        last, since = self.display, time.monotonic()
        while time.monotonic() < deadline:
            self.pump(0.05)
            now = _steady(self.display)
            if now != _steady(last):
                last, since = self.display, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return self.display

    def expect(self, pattern: Any, timeout: float = 30.0) -> int:
        """pexpect's way, on the plain transcript: the next match of `pattern` after the previous one
        (pexpect.EOF: until the process exits)."""
        if pattern is pexpect.EOF:
            self.wait_exit(timeout)
            return 0
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.transcript
            match = regex.search(text, self._seen)
            if match is not None:
                self.before, self._seen = text[self._seen : match.start()], match.end()
                return 0
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g} s waiting for {pattern!r}; the screen:\n{self.display}")
            if not self.pump(0.1) and regex.search(self.transcript, self._seen) is None:
                pytest.fail(f"kimi exited while waiting for {pattern!r}; the screen:\n{self.display}")

    def expect_exact(self, text: str, timeout: float = 30.0) -> int:
        return self.expect(re.escape(text), timeout)

    # --- writing -----------------------------------------------------------------------------------------

    def send(self, keys: str) -> None:
        self.child.send(keys)
        self.pump(0.05)

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def status_line(self) -> str:
        """The bottom toolbar: the last non-empty row of the screen."""
        rows = [line for line in self.display.splitlines() if line.strip()]
        return rows[-1] if rows else ""

    def exit(self, timeout: float = 20.0) -> int:
        """/exit (Ctrl-D would do too), then the exit status."""
        self.send("/exit\r")
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        if self.child.closed:
            return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))
        while self.pump(0.1):
            if time.monotonic() > deadline:
                pytest.fail(f"kimi did not exit; the screen:\n{self.display}")
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def _steady(screen: str) -> str:
    """The screen without what changes by itself (spinner frames, elapsed seconds)."""
    return re.sub(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] [^·]*\d+:\d\d", "", screen)


PROMPT = "❯"  # kimi's input prompt: the screen is ready for the next line


def spawn(repo: Path, env: dict, server: Any, *args: str, cols: int = 120, **kw: object) -> Terminal:
    """`kimi ARGS` in a terminal of `cols` columns, once its prompt shows (`server`: a ScriptedModelServer or None)."""
    term = Terminal.start(repo, env, server, *args, cols=cols, **kw)  # type: ignore[arg-type]
    term.wait_for(PROMPT)
    return term


def finish(term: Terminal) -> int:
    """/exit, then the exit status; the terminal is closed either way."""
    try:
        return term.exit()
    finally:
        term.close()
