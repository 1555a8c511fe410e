"""Approvals for an interactive session: a policy, prefix rules, and a question when a command needs one."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.approval.rules import Verdict, check, command_prefix

__all__ = ["ApprovalRules", "InteractiveApprover", "command_prefix", "save_allow_rule"]


@dataclass
class ApprovalRules:
    """Allow (prefix) and deny rules, decided on the parsed command (kimi_cli.approval.rules)."""

    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def check(self, command: str) -> Verdict:
        return check(command, self.allow, self.deny)

    def allowed(self, command: str) -> bool:
        # A rule for `pytest` must not approve `pytest; rm -rf ~` or `pytest $(rm x)`: only plain commands.
        return self.check(command).kind == "allowed"

    def denied(self, command: str) -> str | None:
        verdict = self.check(command)
        return verdict.rule if verdict.kind == "denied" else None


# (command, prefix) -> "yes" | "always" | "save" | "no:<reason>"; an empty prefix: `always` is not offered.
Ask = Callable[[str, str], Awaitable[str]]


class InteractiveApprover:
    """Sandboxed commands run under `auto`; unsandboxed or networked ones ask, as does everything under `ask`."""

    def __init__(
        self,
        policy: str,
        rules: ApprovalRules,
        ask: Ask,
        network: bool,
        yolo: bool = False,
        project_config: Path | None = None,
    ) -> None:
        self.policy = policy
        self.rules = rules
        self.ask = ask
        self.network = network
        self.yolo = yolo
        self.project_config = project_config

    async def review_shell(self, command: str, sandbox: str) -> str | None:
        verdict = self.rules.check(command)
        if verdict.kind == "denied":
            return f"denied by the rule `{verdict.rule}` (/deny); ask the user before trying another way"
        unvetted = verdict.kind == "unreadable"  # deny rules are set and cannot be checked: always ask
        if not unvetted and (self.yolo or verdict.kind == "allowed"):
            return None
        needs_asking = unvetted or self.policy == "ask" or sandbox == "none" or self.network
        if not needs_asking:
            return None
        if self.policy == "never":
            why = f" (deny rules cannot be checked: {verdict.reason})" if unvetted else ""
            return f"this command needs approval and approvals are set to `never`{why}"
        return await self._ask(command, "" if unvetted else command_prefix(command), savable=True)

    async def review_web(self, host: str, url: str) -> str | None:
        """A host nobody named: ask (always = for the rest of the session)."""
        if self.yolo or f"web:{host}" in self.rules.allow:
            return None
        if self.policy == "never":
            return "fetching needs approval and approvals are set to `never`"
        return await self._ask(f"fetch {url}", f"web:{host}", savable=False)

    async def review_mcp(self, tool_name: str, arguments: str) -> str | None:
        """MCP tools run on the host: they ask under `ask` and `auto`, unless a rule or --yolo allows them."""
        from kimi_cli.approval.mcp_rules import rule_matches

        denied = rule_matches(self.rules.deny, tool_name)
        if denied:
            return f"denied by the rule `{denied}` (/deny)"
        if self.yolo or rule_matches(self.rules.allow, tool_name):
            return None
        if self.policy == "never":
            return "MCP tools need approval and approvals are set to `never`"
        # The whole arguments: the question shows them wrapped, or counts what it leaves out (and then offers
        # no `always`), never a silent cut (kimi_cli.frontends.questions).
        return await self._ask(f"{tool_name} {arguments}", tool_name, savable=True)

    async def _ask(self, question: str, rule: str, savable: bool) -> str | None:
        """Ask the user; `always` keeps `rule` for the session, `save` also writes it to the project config."""
        answer = await self.ask(question, rule)
        if answer in ("always", "save") and not rule:
            return None  # nothing to remember: this once only
        if answer in ("always", "save"):
            self.rules.allow.append(rule)
            if answer == "save" and savable and self.project_config is not None:
                save_allow_rule(self.project_config, rule)
            return None
        if answer == "yes":
            return None
        reason = answer.partition(":")[2].strip()
        return f"the user said no{': ' + reason if reason else ''}"


def save_allow_rule(config_path: Path, prefix: str) -> None:
    """Add `prefix` to [approval].allow in a project config, keeping the rest of the file as it is.
    The user's own rule keeps a trusted folder trusted (kimi_cli.hostsafe.trust.note_own_allow_rule)."""
    import tomllib

    from kimi_cli.hostsafe import trust

    folder = config_path.parent.parent
    before = trust.current(folder)
    from kimi_cli.hostsafe.settings_read import read_settings_text

    text = read_settings_text(config_path) if config_path.exists() else ""
    current = tomllib.loads(text).get("approval", {}).get("allow", []) if text else []
    if prefix in current:
        return
    new_line = "allow = [" + ", ".join(_quote(p) for p in [*current, prefix]) + "]"
    section = re.search(r"^\[approval\]\s*$", text, re.MULTILINE)
    if section is None:
        text = text.rstrip("\n") + ("\n\n" if text else "") + f"[approval]\n{new_line}\n"
    else:
        body_start = section.end()
        next_section = re.search(r"^\[", text[body_start:], re.MULTILINE)
        body_end = body_start + next_section.start() if next_section else len(text)
        body = text[body_start:body_end]
        if re.search(r"^allow\s*=.*$", body, re.MULTILINE):
            body = re.sub(r"^allow\s*=.*$", new_line, body, count=1, flags=re.MULTILINE)
        else:
            body = f"\n{new_line}" + body
        text = text[:body_start] + body + text[body_end:]
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(text)
    trust.note_own_allow_rule(folder, before, prefix)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
