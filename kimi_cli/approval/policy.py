"""The approval modes as data: for each mode, what a kind of call does when no rule decides it.

Rules come first and are the same in every mode (kimi_cli.approval.rules): a deny rule refuses (and a line
it cannot vet asks, or is refused where nobody can be asked); an allow rule approves. Then the mode's row:

    mode       sandboxed  networked  unsandboxed  mcp     web     writes
    ask        ask        ask        ask          ask     ask     run
    auto       run        ask        ask          ask     ask     run
    never      run        refuse     refuse       refuse  refuse  run
    yolo       run        run        run          run     run     run
    headless   run        run        refuse       refuse  refuse  run      (kimi -p, ci-repair: nobody to ask;
                                                                             --allow-network was the user's say)
    plan       the row of the mode before it, and writes refused (by the call's facts, in the gate)

"sandboxed" is a command in a sandbox without the network, "networked" one with it, "unsandboxed" one with
`--sandbox none`. `ask` where nobody can be asked is a refusal that says how to allow the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

RUN, ASK, REFUSE = "run", "ask", "refuse"
KINDS = ("sandboxed", "networked", "unsandboxed", "mcp", "web", "writes")


@dataclass(frozen=True)
class Mode:
    name: str
    sandboxed: str
    networked: str
    unsandboxed: str
    mcp: str
    web: str
    writes: str = RUN
    about: str = ""

    def action(self, kind: str) -> str:
        return str(getattr(self, kind))


MODES: dict[str, Mode] = {
    "ask": Mode("ask", ASK, ASK, ASK, ASK, ASK, about="every call that could change something asks"),
    "auto": Mode("auto", RUN, ASK, ASK, ASK, ASK, about="commands in the sandbox run"),
    "never": Mode("never", RUN, REFUSE, REFUSE, REFUSE, REFUSE, about="what would ask is refused"),
    "yolo": Mode("yolo", RUN, RUN, RUN, RUN, RUN, about="everything runs (the sandbox still applies)"),
    "headless": Mode("headless", RUN, RUN, REFUSE, REFUSE, REFUSE, about="nobody can be asked"),
}
PLAN_WRITES = REFUSE  # plan mode: the row of the mode before it, with this for calls that may write or run


def row(mode: str, before: str = "auto") -> Mode:
    """The row a session in `mode` uses; plan mode keeps the row of the mode before it."""
    if mode == "plan":
        base = MODES.get(before, MODES["auto"])
        return Mode("plan", base.sandboxed, base.networked, base.unsandboxed, base.mcp, base.web, PLAN_WRITES,
                    f"plan mode on {base.name}: calls that write or run are refused")  # fmt: skip
    if mode not in MODES:
        raise ValueError(f"unknown approval mode {mode!r}; modes: {', '.join([*MODES, 'plan'])}")
    return MODES[mode]


def shell_kind(sandbox: str, network: bool) -> str:
    if sandbox == "none":
        return "unsandboxed"
    return "networked" if network else "sandboxed"


@dataclass(frozen=True)
class CallApproval:
    """What the session's approver is told about one call besides the call itself: the folder its relative
    redirections open in, and why a PreToolUse hook let it through ("" : no hook did; kimi_cli.agent.gate).
    A hook's allow spares a question, never a deny rule (kimi_cli.approval.engine). Tools build it from their
    context (kimi_cli.tools.base.ToolContext.approval)."""

    workspace: Path | None = None
    hook_allowed: str = ""


@dataclass(frozen=True)
class Decision:
    """What the engine decided about one call, and what decided it (a rule, a hook or the mode's row)."""

    action: str  # run | ask | refuse
    by: str  # "deny rule `rm`", "allow rule `pytest`", "a PreToolUse hook", "mode auto (sandboxed)"...
    reason: str = ""  # a refusal's text, or why kimi asks (shown with the question)
    offer: str = ""  # the rule `always` would keep ("" : not offered)

    def explain(self) -> str:
        return f"{self.action} ({self.by}{': ' + self.reason if self.reason else ''})"


class Question(str):
    """The text the front end shows (exactly what would run), with what the engine knows about it: the kind
    of call, why it asks, and how many plain commands a chain holds (0: not a plain chain). A str, so a
    front end that only shows text needs nothing else."""

    kind: str
    why: str
    parts: int

    def __new__(cls, text: str, kind: str = "shell", why: str = "", parts: int = 1) -> Question:
        made = super().__new__(cls, text)
        made.kind, made.why, made.parts = kind, why, parts
        return made


# The texts of refusals, by situation; `{rule}`, `{reason}`, `{tool}`, `{server}`, `{host}` filled in.
REFUSALS = {
    ("denied", "attended"): "denied by the rule `{rule}` (/deny); ask the user before trying another way",
    ("denied", "unattended"): "denied by the rule `{rule}`; do not try another way to run it",
    ("unvetted", "never"): "this command needs approval and approvals are set to `never` (deny rules cannot "
    "be checked: {reason})",
    ("unvetted", "unattended"): "deny rules are set and this command cannot be checked against them ({reason}), "
    "and a headless run cannot ask. Write it as plain commands: no computed program names, `eval`, `sh` "
    "without -c, `source`, or parameter operators.",
    ("shell", "never"): "this command needs approval and approvals are set to `never`",
    ("shell", "unattended"): "with --sandbox none every command needs approval, and a headless run cannot ask. "
    "Rerun with --yolo to allow commands, or use a sandbox (--sandbox auto).",
    ("risky", "unattended"): "{reason}, and a headless run cannot ask. Run it without that, or rerun with --yolo.",
    ("mcp-denied", "attended"): "denied by the rule `{rule}` (/deny)",
    ("mcp-denied", "unattended"): "denied by the rule `{rule}`",
    ("mcp", "never"): "MCP tools need approval and approvals are set to `never`",
    ("mcp", "unattended"): "MCP tools run outside the sandbox and need approval, which a headless run cannot ask "
    'for. Allow it with [approval] allow = ["{tool}"] (or "{server}" for the whole server) in .kimi/config.toml, '
    "or rerun with --yolo.",
    ("web", "never"): "fetching needs approval and approvals are set to `never`",
    ("web", "unattended"): "{host} is not a host you named or allowed, and a headless run cannot ask. Allow it "
    'with [web] allowed_hosts = ["{host}"] in .kimi/config.toml, put the URL in the prompt, or use --yolo.',
    ("hook-ask", "unattended"): "blocked: a hook asks the user to confirm this call, and nobody can be asked here",
}


def refusal(situation: str, who: str, **values: str) -> str:
    """The refusal text for `situation` when `who` ("attended", "unattended", "never") cannot run the call."""
    text = REFUSALS.get((situation, who)) or REFUSALS[(situation, "unattended")]
    return text.format(**{"rule": "", "reason": "", "tool": "", "server": "", "host": "", **values})
