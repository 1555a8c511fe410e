"""ModeState: which mode a session is in, and what the model has been told about it.

`ask` and `auto` are approval modes, rows of the engine's table (kimi_cli.approval.policy); `yolo` approves
everything (ACP offers it as a mode); `plan` keeps the row of the mode before it and adds plan mode
(kimi_cli.approval.modes.plan). Front ends change the mode (Shift+Tab, /plan, ACP session/set_mode, --plan) and
listen to changes to keep their approver and status line in step.
"""

from __future__ import annotations

from collections.abc import Callable

CYCLE = ("ask", "auto", "plan")  # Shift+Tab in the terminal
MODES = ("ask", "auto", "plan", "yolo")


class ModeState:
    """The current mode, the one plan mode returns to, and whether the model knows plan mode is on."""

    def __init__(self, mode: str = "auto", base: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        self.current = mode
        self.previous = base if mode == "plan" else mode  # where approving a plan goes back to
        self.told_plan = False  # the conversation says plan mode is on (kimi_cli.approval.modes.plan notes)
        self.listeners: list[Callable[[str], None]] = []

    @property
    def plan(self) -> bool:
        return self.current == "plan"

    def set(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        if mode == self.current:
            return
        if mode == "plan":
            self.previous = self.current
        self.current = mode
        for listener in list(self.listeners):
            listener(mode)

    def cycle(self) -> str:
        """The next mode of ask -> auto -> plan -> ask (yolo goes to ask)."""
        index = CYCLE.index(self.current) if self.current in CYCLE else -1
        self.set(CYCLE[(index + 1) % len(CYCLE)])
        return self.current

    def leave_plan(self) -> str:
        """Back to the mode before plan mode (approving a plan); returns it."""
        self.set(self.previous if self.previous != "plan" else "auto")
        return self.current

    def pending(self) -> str | None:
        """ "enter" or "leave" when the conversation has not been told the mode it is in now, else None;
        a switch there and back before the next request tells nothing."""
        if self.plan == self.told_plan:
            return None
        self.told_plan = self.plan
        return "enter" if self.plan else "leave"
