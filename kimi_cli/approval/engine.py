"""Approver: the one approval engine, for the terminal, ACP and headless runs alike.

A front end supplies only how to ask (`ask`, a callback; None where nobody can be asked) and how to keep
a rule for later sessions (`save`). What is decided is the engine's, in one order for every kind of call:
deny rules, a PreToolUse hook's allow, allow rules, then the mode's row (policy.py). Each decision says
what decided it (Decision.by), and a question says why it asks.

A hook's "allow" never overrides a deny rule: a denied command is refused, and a line the deny rules
cannot vet still asks (or is refused where nobody can be asked), whatever a hook answered. A hook may only
spare the user a question the mode would have asked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kimi_cli.approval.mcp_rules import server_rule
from kimi_cli.approval.policy import ASK, REFUSE, RUN, CallApproval, Decision, Mode, Question, refusal, row, shell_kind
from kimi_cli.approval.rules import Rules
from kimi_cli.approval.shell.reading import ShellReading, read_shell

# (question, rule) -> "yes" | "always" | "save" | "no:<reason>"; an empty rule: `always` is not offered.
Ask = Callable[[Question, str], Awaitable[str]]
Save = Callable[[str], object]  # keeps an allow rule for later sessions (the front end says how it went)
Observer = Callable[[str, str, Decision], None]  # (kind, subject, decision): every decision, for the record


class Approver:
    """Decides each call's approval from the session's rules and mode; asks through `ask`."""

    def __init__(
        self,
        rules: Rules,
        mode: str = "auto",
        ask: Ask | None = None,
        network: bool = False,
        save: Save | None = None,
        before: str = "auto",
    ) -> None:
        self.rules = rules
        self.ask = ask
        self.network = network  # the sandbox lets commands reach the network
        self.save = save
        self.observer: Observer | None = None
        self.mode = mode
        self.before = before  # the mode plan mode returns to (its row applies meanwhile)
        self.row: Mode = row(mode, before)

    @classmethod
    def unattended(cls, rules: Rules, yolo: bool) -> Approver:
        """kimi -p and ci-repair: nobody to ask; --yolo runs what the rules allow."""
        return cls(rules, "yolo" if yolo else "headless")

    def set_mode(self, mode: str) -> None:
        """Follow the session's mode; plan mode keeps the row of the mode before it."""
        if mode == "plan":
            if self.mode != "plan":
                self.before = self.mode
        else:
            self.before = mode
        self.mode = mode
        self.row = row(mode, self.before)

    @property
    def who(self) -> str:
        """Whose refusal text applies: nobody can be asked ("unattended"), the user said `never`, or a user."""
        if self.ask is None:
            return "unattended"
        return "never" if (self.before if self.mode == "plan" else self.mode) == "never" else "attended"

    # --- shell commands --------------------------------------------------------------------------------

    def decide_shell(self, reading: ShellReading, sandbox: str, call: CallApproval | None = None) -> Decision:
        call = call or CallApproval()
        root = str(call.workspace) if call.workspace is not None else None
        verdict = self.rules.check(reading, root)
        if verdict.kind == "denied":
            who = "unattended" if self.ask is None else "attended"
            return Decision(REFUSE, f"deny rule `{verdict.rule}`", refusal("denied", who, rule=verdict.rule))
        if verdict.kind == "unreadable":  # a possible match of a deny rule: only the user may run it
            why = f"deny rules are set and cannot vet this line: {verdict.reason}"
            if self.who != "attended":
                return Decision(REFUSE, "deny rules", refusal("unvetted", self.who, reason=verdict.reason))
            return Decision(ASK, "deny rules", why)
        if call.hook_allowed:
            return Decision(RUN, f"a PreToolUse hook ({call.hook_allowed})")
        if verdict.kind == "allowed":
            return Decision(RUN, f"allow rule `{verdict.rule}`")
        kind = shell_kind(sandbox, self.network)
        action = self.row.action(kind)
        by = f"mode {self.row.name} ({kind})"
        if verdict.reason:  # an allow rule matched, but the arguments do more than it names: the row decides
            by = f"allow rule `{verdict.rule}`, not for these arguments; mode {self.row.name} ({kind})"
        if action == RUN:
            return Decision(RUN, by)
        if action == ASK and self.ask is not None:
            return Decision(ASK, by, verdict.reason, reading.offer)
        if verdict.reason:
            return Decision(REFUSE, by, refusal("risky", self.who, reason=verdict.reason))
        return Decision(REFUSE, by, refusal("shell", self.who))

    async def review_shell(self, command: str, sandbox: str, call: CallApproval | None = None) -> str | None:
        """None to run `command`, or why it was not run."""
        reading = read_shell(command)
        decision = self.decide_shell(reading, sandbox, call)
        self._tell("shell", command, decision)
        if decision.action == RUN:
            return None
        if decision.action == REFUSE:
            return decision.reason
        question = Question(command, "shell", decision.reason, len(reading.parts or []))
        return await self._ask(question, decision.offer, savable=True)

    # --- web hosts -------------------------------------------------------------------------------------

    def decide_web(self, host: str, call: CallApproval | None = None) -> Decision:
        if call is not None and call.hook_allowed:
            return Decision(RUN, f"a PreToolUse hook ({call.hook_allowed})")
        if self.rules.web_allowed(host):
            return Decision(RUN, f"allow rule `web:{host}`")
        action = self.row.web
        by = f"mode {self.row.name} (web)"
        if action == RUN:
            return Decision(RUN, by)
        if action == ASK and self.ask is not None:
            return Decision(ASK, by, offer=f"web:{host}")
        return Decision(REFUSE, by, refusal("web", self.who, host=host))

    async def review_web(self, host: str, url: str, call: CallApproval | None = None) -> str | None:
        """A host nobody named: its mode's row decides (always = for the rest of the session)."""
        decision = self.decide_web(host, call)
        self._tell("web", url, decision)
        if decision.action == RUN:
            return None
        if decision.action == REFUSE:
            return decision.reason
        return await self._ask(Question(f"fetch {url}", "web"), decision.offer, savable=False)

    # --- MCP tools -------------------------------------------------------------------------------------

    def decide_mcp(self, tool_name: str, call: CallApproval | None = None) -> Decision:
        denied = self.rules.mcp_denied(tool_name)
        who = "unattended" if self.ask is None else "attended"
        if denied:
            return Decision(REFUSE, f"deny rule `{denied}`", refusal("mcp-denied", who, rule=denied))
        if call is not None and call.hook_allowed:
            return Decision(RUN, f"a PreToolUse hook ({call.hook_allowed})")
        allowed = self.rules.mcp_allowed(tool_name)
        if allowed:
            return Decision(RUN, f"allow rule `{allowed}`")
        action = self.row.mcp
        by = f"mode {self.row.name} (mcp)"
        if action == RUN:
            return Decision(RUN, by)
        if action == ASK and self.ask is not None:
            return Decision(ASK, by, offer=tool_name)
        return Decision(REFUSE, by, refusal("mcp", self.who, tool=tool_name, server=server_rule(tool_name)))

    async def review_mcp(self, tool_name: str, arguments: str, call: CallApproval | None = None) -> str | None:
        """MCP tools run on the host: they ask under `ask` and `auto`, unless a rule or --yolo allows them."""
        decision = self.decide_mcp(tool_name, call)
        self._tell("mcp", f"{tool_name} {arguments}", decision)
        if decision.action == RUN:
            return None
        if decision.action == REFUSE:
            return decision.reason
        # The whole arguments: the question shows them wrapped, or counts what it leaves out (and then offers
        # no `always`), never a silent cut (kimi_cli.frontends.questions).
        return await self._ask(Question(f"{tool_name} {arguments}", "mcp"), decision.offer, savable=True)

    # --- asking ----------------------------------------------------------------------------------------

    async def _ask(self, question: Question, rule: str, savable: bool) -> str | None:
        """Ask the user; `always` keeps `rule` for the session, `save` also keeps it for later sessions."""
        assert self.ask is not None
        answer = await self.ask(question, rule)
        if answer in ("always", "save") and not rule:
            return None  # nothing to remember: this once only
        if answer in ("always", "save"):
            self.rules.add_allow(rule)
            if answer == "save" and savable and self.save is not None:
                self.save(rule)
            return None
        if answer == "yes":
            return None
        reason = answer.partition(":")[2].strip()
        return f"the user said no{': ' + reason if reason else ''}"

    def _tell(self, kind: str, subject: str, decision: Decision) -> None:
        if self.observer is not None:
            self.observer(kind, subject, decision)
