"""Keep asyncio's child-watcher warning about an already-reaped process off the user's terminal.

Where it comes from: asyncio (3.11's ThreadedChildWatcher) waits for each subprocess in a thread with
waitpid(pid). When a turn is cancelled (Ctrl-C, Esc, SIGTERM) right as a command is killed, the process
may be reaped first by the transport itself: closing an asyncio subprocess transport whose process has
not been seen to exit calls Popen.poll(), which reaps it. The watcher thread's waitpid then fails and it
logs `Unknown child process pid N, will report returncode 255` (3.12's pidfd watcher: `... exit status
already read`). Nothing is wrong: kimi killed that process group itself and never reads that status
(run_process_group collects the status first where it can). The message goes to kimi's debug log instead.
"""

from __future__ import annotations

import logging

REAPED = ("Unknown child process pid", "child process pid")


class _AlreadyReaped(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if record.name == "asyncio" and message.startswith(REAPED) and "returncode 255" in message:
            logging.getLogger("kimi.processes").debug(record.getMessage())
            return False
        return True


_FILTER = _AlreadyReaped()


def quiet_child_watcher() -> None:
    """Install the filter on asyncio's logger (idempotent)."""
    logger = logging.getLogger("asyncio")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
