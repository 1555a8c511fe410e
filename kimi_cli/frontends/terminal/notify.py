"""Tell the user when kimi is done or waits for them while they look elsewhere ([notifications]).

Focus: the session asks the terminal to report focus (CSI ?1004h); the terminal then sends CSI I when its
window gains focus and CSI O when it loses it. prompt_toolkit knows neither sequence, so they are taught to
its input parser as two otherwise unused keys (F23, F24) and bound here; a terminal that never reports
counts as focused, so `when = "unfocused"` (the default) stays silent there, and `when = "always"` does not.

How: an OSC 9 (iTerm2, WezTerm, Ghostty, Windows Terminal) or OSC 777 (VTE terminals, foot, rxvt) desktop
notification, or the bell; under tmux the OSC goes through its passthrough and the bell is rung too. Where
`notify-send` exists (a desktop session) it is run as well: a host program, looked up where no sandboxed
command can plant one, with the environment less the key variables. The text names the event and, for an
approval, the start of the command (model-chosen text: control characters are written out).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from typing import Any

from kimi_cli.util.sanitize import visible

FOCUS_ON, FOCUS_OFF = "\x1b[?1004h", "\x1b[?1004l"
FOCUS_IN, FOCUS_OUT = "\x1b[I", "\x1b[O"
MAX_TEXT = 200
OSC9_TERMINALS = ("iTerm.app", "WezTerm", "ghostty", "vscode")


def method_for(environ: dict[str, str] | os._Environ[str]) -> str:
    """`auto`: the notification this terminal shows, from what it says of itself."""
    program = environ.get("TERM_PROGRAM", "")
    if program in OSC9_TERMINALS or environ.get("WT_SESSION"):
        return "osc9"
    if environ.get("VTE_VERSION") or environ.get("TERM", "").startswith(("foot", "rxvt")):
        return "osc777"
    return "bell"


def sequence(method: str, title: str, body: str, in_tmux: bool) -> str:
    """What is written to the terminal for one notification."""
    if method == "osc9":
        osc = f"\x1b]9;{title}: {body}\x07"
    elif method == "osc777":
        osc = f"\x1b]777;notify;{title};{body}\x07"
    else:
        return "\x07"
    if in_tmux:  # tmux passes an escape through only wrapped, with each ESC doubled (and allow-passthrough on)
        return "\x1bPtmux;" + osc.replace("\x1b", "\x1b\x1b") + "\x1b\\" + "\x07"
    return osc


def clean(text: str) -> str:
    """One line, every control character written out (no ESC or BEL can end the OSC early), and short."""
    line = visible(" ".join(text.split()), one_line=True)
    return line if len(line) <= MAX_TEXT else line[: MAX_TEXT - 1] + "…"


class Notifier:
    """One per interactive session (`app` is the InteractiveApp)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.settings = app.runtime.config.notifications
        self.focused = True  # until the terminal says otherwise
        self.reporting = False  # whether the terminal ever reported focus

    # --- focus ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Teach the parser the focus reports and ask the terminal for them."""
        if not self.settings.enabled:
            return
        from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
        from prompt_toolkit.keys import Keys

        ANSI_SEQUENCES[FOCUS_IN] = Keys.F23
        ANSI_SEQUENCES[FOCUS_OUT] = Keys.F24
        self._write(FOCUS_ON)

    def stop(self) -> None:
        if self.settings.enabled:
            self._write(FOCUS_OFF)

    def bind_keys(self, bindings: Any) -> None:
        @bindings.add("f23")
        def _focus_in(event: Any) -> None:
            self.focused, self.reporting = True, True

        @bindings.add("f24")
        def _focus_out(event: Any) -> None:
            self.focused, self.reporting = False, True

    # --- notifying -----------------------------------------------------------------------------------------

    def turn_ended(self, summary: str) -> None:
        self.notify("kimi", f"turn {summary}")

    def waiting(self, what: str) -> None:
        self.notify("kimi", f"waiting for you: {what}")

    def notify(self, title: str, body: str) -> None:
        settings = self.settings
        if not settings.enabled or (settings.when == "unfocused" and self.focused):
            return
        body = clean(body)
        method = method_for(os.environ) if settings.method == "auto" else settings.method
        self._write(sequence(method, title, body, bool(os.environ.get("TMUX"))))
        if settings.desktop:
            self._desktop(title, body)

    def _desktop(self, title: str, body: str) -> None:
        from kimi_cli.hostsafe.programs import host_which
        from kimi_cli.hostsafe.secrets import without_keys

        if not any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")):
            return  # no desktop session to show it
        program = host_which("notify-send", exclude=[self.app.runtime.workdir])
        if program is None:
            return
        with contextlib.suppress(OSError):  # fire and forget; `--`: a body starting with `-` is no option
            subprocess.Popen([program, "--app-name=kimi", "--", title, body], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=without_keys(os.environ),
                             start_new_session=True)  # fmt: skip

    def _write(self, data: str) -> None:
        """Straight to the terminal, past prompt_toolkit's renderer (it would write escapes out)."""
        try:
            output = self.app.input.app.output
            output.write_raw(data)
            output.flush()
        except Exception:
            pass
