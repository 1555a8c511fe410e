"""Approval decisions for a headless run, where nobody can be asked."""

from __future__ import annotations


class HeadlessApprover:
    """Sandboxed commands run; unsandboxed ones need --yolo, since a headless run cannot ask. MCP tools run
    on the host: they need --yolo or an allow rule (`mcp__server__tool`, `mcp__server__*`)."""

    def __init__(self, yolo: bool, allow: list[str] | None = None, deny: list[str] | None = None) -> None:
        self.yolo = yolo
        self.allow = list(allow or [])
        self.deny = list(deny or [])

    async def review_web(self, host: str, url: str) -> str | None:
        if self.yolo:
            return None
        return (
            f"{host} is not a host you named or allowed, and a headless run cannot ask. Allow it with "
            f'[web] allowed_hosts = ["{host}"] in .kimi/config.toml, put the URL in the prompt, or use --yolo.'
        )

    async def review_mcp(self, tool_name: str, arguments: str) -> str | None:
        from kimi_cli.approval.mcp_rules import rule_matches, server_rule

        denied = rule_matches(self.deny, tool_name)
        if denied:
            return f"denied by the rule `{denied}`"
        if self.yolo or rule_matches(self.allow, tool_name):
            return None
        return (
            f"MCP tools run outside the sandbox and need approval, which a headless run cannot ask for. "
            f'Allow it with [approval] allow = ["{tool_name}"] (or "{server_rule(tool_name)}" for the whole '
            "server) in .kimi/config.toml, or rerun with --yolo."
        )

    async def review_shell(self, command: str, sandbox: str) -> str | None:
        """The terminal's rules on the parsed command: deny wherever the program appears; allow rules only
        for one plain command; a line the deny rules cannot vet is refused, since nobody can be asked."""
        from kimi_cli.approval.rules import check

        verdict = check(command, self.allow, self.deny)
        if verdict.kind == "denied":
            return f"denied by the rule `{verdict.rule}`; do not try another way to run it"
        if verdict.kind == "unreadable":
            return (
                f"deny rules are set and this command cannot be checked against them ({verdict.reason}), "
                "and a headless run cannot ask. Write it as plain commands: no computed program names, "
                "`eval`, `sh` without -c, `source`, or parameter operators."
            )
        if self.yolo or sandbox != "none" or verdict.kind == "allowed":
            return None
        return (
            "with --sandbox none every command needs approval, and a headless run cannot ask. "
            "Rerun with --yolo to allow commands, or use a sandbox (--sandbox auto)."
        )
