"""`/goal [--steps N] [--cost USD] CHECK`: keep working until the check command passes (exit 0), or a step or
cost limit is reached (issue 46, item 13).

The check is the user's own command, run in the session's sandbox as the Shell tool's commands are
(`runtime.sandbox.run`): before the first round and after each turn. While it fails, the next round is queued
as an ordinary prompt naming the command and its exit status; its output goes to the terminal, never into
the prompt (it is the sandbox's text, and a user message carries the user's authority: the model runs the
check itself to read it). The status line shows the round, the steps and the cost against their limits;
the goal stops, saying why, when the check passes, a limit is reached, a turn is interrupted or ends on
its own limit, or on `/goal stop`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from kimi_cli.frontends.terminal.status import money
from kimi_cli.util.sanitize import visible_text

STEPS = 50  # the default step limit, over every round together
CHECK_TIMEOUT = 600.0  # seconds for one run of the check
TAIL_LINES = 8  # of the check's output, shown to the user after each run
USAGE = "/goal [--steps N] [--cost USD] CHECK   (CHECK: a shell command; the goal is met when it exits 0)"


@dataclass
class Goal:
    check: str
    steps: int = STEPS
    cost: float | None = None  # USD over the goal's rounds; None: no cost limit
    rounds: int = 0
    used: int = 0  # steps so far
    cost_at_start: float = 0.0


def parse(arg: str) -> Goal:
    """`--steps N`, `--cost USD`, then the check command (the rest of the line, as typed). ValueError: why not."""
    words = shlex.split(arg)  # for the options only; the command is kept as typed
    rest = arg.strip()
    goal = Goal("")
    while words and words[0] in ("--steps", "--cost"):
        if len(words) < 2:
            raise ValueError(f"{words[0]} needs a value")
        option, value = words[0], words[1]
        try:
            if option == "--steps":
                goal.steps = int(value)
            else:
                goal.cost = float(value.lstrip("$"))
        except ValueError:
            raise ValueError(f"{option} takes a number, not {value!r}") from None
        if goal.steps < 1 or (goal.cost is not None and goal.cost <= 0):
            raise ValueError(f"{option} must be above 0")
        words = words[2:]
        rest = rest.split(None, 2)[2] if len(rest.split(None, 2)) > 2 else ""
    if rest.startswith("-- "):
        rest = rest[3:].strip()
    if not rest:
        raise ValueError("no check command")
    goal.check = rest
    return goal


def round_prompt(goal: Goal, exit_code: int | None, timed_out: bool) -> str:
    status = "did not finish in time" if timed_out else f"exits {exit_code}"
    return (
        f"Goal (round {goal.rounds}): make the check command `{goal.check}` pass (exit 0). It {status} now. "
        "Run it to see why, fix the cause (not the check), and stop when it passes."
    )


class GoalRunner:
    """Registered once per interactive session; `app` is the InteractiveApp (its inbox takes the next round)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.console = app.console
        self.active: Goal | None = None
        app.status.extra.append(self.segment)

    def register(self, registry: Any) -> None:
        from kimi_cli.frontends.terminal.slash_registry import SlashCommand

        registry.add(SlashCommand("goal", "keep working until a check command passes, or a step or cost limit",
                                  self.cmd_goal, "/goal [--steps N] [--cost USD] CHECK | stop"))  # fmt: skip

    def say(self, text: str, style: str = "") -> None:
        self.console.print(visible_text(text, style) if style else visible_text(text))

    def segment(self) -> str:
        goal = self.active
        if goal is None:
            return ""
        cost = f" · {money(self.spent(goal))}/{money(goal.cost)}" if goal.cost is not None else ""
        return f"goal round {goal.rounds} · {goal.used}/{goal.steps} steps{cost}"

    def spent(self, goal: Goal) -> float:
        return max(0.0, float(self.app.status.cost) - goal.cost_at_start)

    async def cmd_goal(self, arg: str) -> None:
        if arg.strip() in ("", "status"):
            self.say(f"goal: `{self.active.check}` ({self.segment()})" if self.active else f"no goal set. {USAGE}")
            return
        if arg.strip() == "stop":
            self.stop("stopped by /goal stop" if self.active else "", "")
            return
        if self.active is not None:
            self.say(f"a goal is set already (`{self.active.check}`); /goal stop ends it", "yellow")
            return
        try:
            goal = parse(arg)
        except ValueError as exc:
            self.say(f"{exc}. {USAGE}", "yellow")
            return
        if goal.cost is not None and not self.app.status.priced:
            self.say("this model has no price in the table: the cost limit cannot apply (the step limit does)",
                     "yellow")  # fmt: skip
        goal.cost_at_start = float(self.app.status.cost)
        self.active = goal
        try:
            await self.next_round(inside_command=True)
        except BaseException:  # Esc or Ctrl-C cancelled the command (its first check): no goal left behind
            self.active = None
            raise

    async def after_turn(self, outcome: Any) -> None:
        """The session calls this once a turn has ended: check again, go on, or stop."""
        goal = self.active
        if goal is None:
            return
        if outcome is None:
            self.stop("a turn was interrupted")
            return
        goal.used += int(getattr(outcome, "steps", 0))
        if outcome.reason != "done":
            self.stop(f"the turn stopped ({outcome.reason})")
            return
        await self.next_round()

    async def next_round(self, inside_command: bool = False) -> None:
        goal = self.active
        assert goal is not None
        result = await self.run_check(goal, inside_command)
        if result is None:
            self.stop("the check was interrupted")
            return
        if result.exit_code == 0 and not result.timed_out:
            self.active = None
            done = f"after {goal.rounds} round(s), {goal.used} step(s)" if goal.rounds else "already: nothing to do"
            self.say(f"✓ goal met: `{goal.check}` passes {done}", "green")
            return
        if goal.used >= goal.steps:
            self.stop(f"the step limit ({goal.steps}) is reached")
            return
        if goal.cost is not None and self.app.status.priced and self.spent(goal) >= goal.cost:
            self.stop(f"the cost limit ({money(goal.cost)}) is reached")
            return
        goal.rounds += 1
        self.app.inbox.put_nowait(round_prompt(goal, result.exit_code, result.timed_out))

    async def run_check(self, goal: Goal, inside_command: bool) -> Any:
        """The check in the sandbox, as work Esc interrupts (None then); its output's end shown. From /goal
        itself it runs inside the command's own interruptible task; after a turn, as a task of its own."""
        work = self.app.runtime.sandbox.run(goal.check, CHECK_TIMEOUT)
        if inside_command:
            self.app.status.phase = "goal: checking"
            result = await work
        else:
            result = await self.app.busy(work, "goal: checking")
        if result is None:
            return None
        status = "timed out" if result.timed_out else f"exit {result.exit_code}"
        self.say(f"goal check `{goal.check}`: {status}", "green" if result.exit_code == 0 else "yellow")
        tail = [line for line in result.output.rstrip().splitlines() if line.strip()][-TAIL_LINES:]
        if tail and result.exit_code != 0:
            self.console.print(visible_text("\n".join("  " + line for line in tail), "dim"))
        return result

    def stop(self, why: str, style: str = "yellow") -> None:
        goal, self.active = self.active, None
        if goal is None:
            self.say("no goal set")
            return
        spent = f", {money(self.spent(goal))}" if self.app.status.priced else ""
        self.console.print(Text("", style=style).append_text(visible_text(
            f"goal stopped: {why}; `{goal.check}` does not pass yet ({goal.rounds} round(s), {goal.used} step(s)"
            f"{spent})", style or "")))  # fmt: skip
