"""One key, no Enter, for the questions asked outside the session's input line (before it starts: the folder's
trust, `kimi login` and the first run's setup). Inside the session, the input line's Question does the same.

Enter takes the default the question shows; Esc and Ctrl-D take it too. Ctrl-C stays a signal
(KeyboardInterrupt), so each caller decides what it means (no, for trust; cancel, for login).
"""

from __future__ import annotations

import sys

ENTER = ("\r", "\n")
DEFAULT_KEYS = ("\x1b", "\x04")  # Esc, Ctrl-D


def read_key(keys: str, default: str) -> str:
    """One of `keys` (single characters, compared lower-case) read as one key press on the terminal, in cbreak
    mode meanwhile (no echo, no line buffering); Enter, Esc and Ctrl-D answer `default`; other keys are
    ignored. Only for a terminal: callers read a line from a pipe."""
    import os
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)  # Ctrl-C still a signal
        while True:
            key = os.read(fd, 1).decode("latin-1").lower()
            if key and key in keys:
                return key
            if key in ("", *ENTER, *DEFAULT_KEYS):
                return default
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def ask_key(question: str, keys: str, default: str) -> str:
    """Write `question`, read the answer: one key on a terminal, else a line (one of `keys`, or the default for
    anything else). The answer is echoed after the question so the scrollback shows what was chosen."""
    sys.stdout.write(question)
    sys.stdout.flush()
    if sys.stdin.isatty():
        answer = read_key(keys, default)
    else:
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        answer = line.strip().lower()
        answer = answer if len(answer) == 1 and answer in keys else default
    sys.stdout.write(answer + "\n")
    sys.stdout.flush()
    return answer
