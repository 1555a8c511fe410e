"""Every setting of the config model, classified: may a folder's own `.kimi/config.toml` set it untrusted?

WIDENING names the settings that may make kimi do more than the user's own config lets it (where the API key
goes, what runs on the host or in which image, less asking, more network), each with the rule for when a
value widens. NARROWING names the rest: settings that narrow what kimi does or change nothing of what it may
do (a deny rule, a model name, a budget of the user's own session); they always apply.

A "limit" is a bound or a switch that protects the host (memory, processes, bytes kimi holds) or asks for
less: a folder may tighten it without trust (a lower number, a switch off, "ask" over "auto"), and then never
past the value already in effect (the user's own, else kimi's default); above kimi's default it is a widening
that needs trust. tests/attacks/trust/test_trust_table.py walks the config model and fails on a setting in
neither table and on a name here that is no setting, so a setting added later must be decided here.

Dotted names; `*` stands for any key of a table of tables (`models."kimi-k3"`).
"""

from __future__ import annotations

import copy
import re
from typing import Any, Protocol

# name -> when it widens: "any" (any value), "true" (anything but false), "nonempty" (a non-empty list or
# table), "limit" (above kimi's default, see above), or a tuple of the values that widen.
WIDENING: dict[str, Any] = {
    "base_url": "any",  # the user's key would go to the folder's endpoint
    "provider": "any",
    "api_key": "any",
    "providers": "nonempty",
    "yolo": "true",
    "subagents": "limit",  # a switch: the folder may turn the Agent tool off, not back on
    "max_steps": "limit",  # the user's own caps on a session's steps and tokens (what a run may cost)
    "max_tokens": "limit",
    # how long a run may wait on a server: a folder's `base_delay = 1e9` hung a headless job on its first 429
    "retry.max_retries": "limit",
    "retry.base_delay": "limit",
    "retry.max_delay": "limit",
    "retry.request_timeout": "limit",
    "approval.allow": "nonempty",
    "approval.policy": "limit",  # never < ask < auto (LIMIT_ORDER): the folder may only ask more
    "sandbox.mode": ("none",),
    "sandbox.allow_network": "true",
    "sandbox.env_allow": "nonempty",  # kimi's environment (tokens, database URLs) into commands
    "sandbox.docker_image": "any",  # what commands run in: an image can carry tokens, programs, a setuid shell
    "sandbox.docker_memory": "limit",
    "sandbox.docker_pids_limit": "limit",
    "shell.output_cap": "limit",  # kimi holds a command's output up to it
    "shell.max_background_tasks": "limit",
    "context.max_file_bytes": "limit",  # the pack reads files up to it
    "checkpoints.max_file_bytes": "limit",  # snapshots copy files up to it
    "web.enabled": "limit",
    "web.search": "limit",
    "web.allowed_hosts": "nonempty",
    "web.allowed_private_hosts": "nonempty",
    "git.allow_hooks": "true",
    "images.long_edge": "limit",  # how large an image kimi decodes and sends
    "models.*.image_long_edge": "limit",
    "models.*.max_request_bytes": "limit",
    "mcp_config": "nonempty",
    "hooks": "any",
    "telemetry.otlp_endpoint": "any",  # the session's spans and metrics would go to the folder's collector
    "telemetry.otlp_headers": "nonempty",
    "telemetry.log_prompts": "true",  # prompts, answers and tool output in the spans
    "lsp.enabled": "limit",  # a switch: the folder may turn the language servers off, not back on
    "lsp.languages": "nonempty",  # which servers run for a language
    "lsp.servers.*.command": "nonempty",  # a program kimi starts (in the sandbox; on the host with --sandbox none)
    "lsp.servers.*.languages": "nonempty",
    "lsp.servers.*.enabled": "limit",
    "status_line.command": "any",  # a command kimi runs on the host, for every status refresh
}
# Each field of an MCP server's entry (kimi_cli.extensions.mcp.config.ServerConfig) in a folder's .kimi/mcp.json
# or a file its config lists: "folder" may be set there (the whole file needs the folder's trust: "mcp" below, and
# any change asks again), "user" only in the user's own files (~/.kimi/mcp.json, --mcp-config); a folder's value
# is replaced by the default, with a notice. tests/attacks/mcp/test_sandboxed_server_settings.py walks the model.
MCP_SERVER_FIELDS: dict[str, str] = {
    "command": "folder", "args": "folder", "env": "folder", "cwd": "folder", "url": "folder", "headers": "folder",
    "transport": "folder", "enabled": "folder", "startup_timeout": "folder", "startup_wait": "folder",
    "tool_timeout": "folder", "enabled_tools": "folder", "disabled_tools": "folder", "read_only": "folder",
    # in the sandbox, what the server may reach: a trusted folder's server may ask for the workspace or the network
    "workspace": "folder", "network": "folder", "pass_env": "folder",
    "sandbox": "user",  # false: on the host with the user's rights, as every stdio server ran before issue 41
}  # fmt: skip
# A limit whose values are words: their order, tightest first.
LIMIT_ORDER: dict[str, tuple[str, ...]] = {"approval.policy": ("never", "ask", "auto")}
# A limit where 0 means none at all (Docker's `--memory 0`): the loosest value, not the tightest.
ZERO_IS_UNLIMITED: tuple[str, ...] = ("sandbox.docker_memory",)
# Lists that narrow by what they name (a deny rule, a hidden path, a withheld variable): a folder's list joins
# the one below it, never replaces it. The config layers replace lists, so `deny = []` in a folder's config
# erased the user's own deny rules (and `hidden_paths = []` their hidden files), untrusted and unasked.
JOINED: tuple[str, ...] = ("approval.deny", "sandbox.hidden_paths", "sandbox.env_deny")
NARROWING: tuple[str, ...] = (
    "model", "max_output_tokens", "transport", "thinking", "context_length", "effort",
    "grep_timeout",  # capped at 600 s by the config model
    "sandbox.hidden_paths", "sandbox.env_deny",
    "shell.default_timeout",  # capped at 600 s, as the model may ask of any call
    "git.co_author_trailer", "git.author_name", "git.author_email",
    "context.pack", "context.budget_ratio", "context.budget", "context.compact_at",
    "approval.deny",
    "web.fetch_timeout",  # capped at 600 s
    "pricing.input", "pricing.cached_input", "pricing.output",  # what kimi shows a session costs
    "models.*.name", "models.*.aliases", "models.*.context_window", "models.*.image_input", "models.*.reasoning",
    "lsp.timeout", "lsp.start_timeout", "lsp.max_lines",  # capped by the config model (30 s, 60 s, 200 lines)
    "mcp.startup_timeout",  # how long the first request waits for servers: capped at 120 s
    # How kimi tells the user a turn ended (a terminal escape, the bell, the host's notify-send, looked up
    # where no sandboxed command can plant one): the folder chooses no program and no text.
    "notifications.enabled", "notifications.method", "notifications.when", "notifications.desktop",
    "status_line.timeout",  # capped at 10 s by the config model
    "models.*.effort_levels", "models.*.thinking_can_disable", "models.*.price_input", "models.*.price_cached_input",
    "models.*.price_output", "models.*.price_source", "models.*.max_tools", "models.*.image_patch",
    "models.*.tools_in_messages",  # where late tools are declared: the same tools either way
)  # fmt: skip
WHAT = {
    "base_url": "send requests (and your API key) to {host} ({value})",
    "provider": "use the provider {value}",
    "api_key": "use its own API key",
    "providers": "change provider endpoints: {host} ({value})",
    "yolo": "approve every action (yolo)",
    "subagents": "turn subagents back on",
    "max_steps": "raise the step limit to {value}",
    "max_tokens": "raise the session's token budget to {value}",
    "retry.max_retries": "retry a failed request up to {value} times",
    "retry.base_delay": "wait {value} s before the first retry",
    "retry.max_delay": "wait up to {value} s between retries",
    "retry.request_timeout": "wait up to {value} s of a server's silence (its headers, then each part of an answer)",
    "approval.allow": "approve without asking: {value}",
    "approval.policy": "ask less before actions (approval.policy = {value})",
    "sandbox.mode": 'run commands with no sandbox (sandbox.mode = "none")',
    "sandbox.allow_network": "give sandboxed commands the network",
    "sandbox.env_allow": "pass your environment variables {value} to commands",
    "sandbox.docker_image": "run commands in its own Docker image {value}",
    "sandbox.docker_memory": "raise the Docker sandbox's memory limit to {value}",
    "sandbox.docker_pids_limit": "raise the Docker sandbox's process limit to {value}",
    "shell.output_cap": "raise the command output kimi keeps to {value} bytes",
    "shell.max_background_tasks": "allow {value} background commands at once",
    "context.max_file_bytes": "pack files of up to {value} bytes",
    "checkpoints.max_file_bytes": "snapshot files of up to {value} bytes",
    "web.enabled": "turn web fetching back on",
    "web.search": "turn web search back on",
    "web.allowed_hosts": "fetch without asking from {value}",
    "web.allowed_private_hosts": "fetch from private or local hosts {value}",
    "git.allow_hooks": "run the repository's git hooks on commit",
    "images.long_edge": "send images up to {value} pixels on a side",
    "models.*.image_long_edge": "send images up to {value} pixels on a side",
    "models.*.max_request_bytes": "build requests of up to {value} bytes",
    "mcp_config": "load MCP config files {value}",
    "hooks": "run hook commands",
    "telemetry.otlp_endpoint": "send the session's telemetry to {host} ({value})",
    "telemetry.otlp_headers": "send telemetry with its own headers {value}",
    "telemetry.log_prompts": "put your prompts, answers and tool output in telemetry",
    "lsp.enabled": "turn the language servers back on",
    "lsp.languages": "choose the language servers kimi starts: {value}",
    "lsp.servers.*.command": "start its own language server {value}",
    "lsp.servers.*.languages": "start language servers for other languages: {value}",
    "lsp.servers.*.enabled": "turn a language server back on",
    "status_line.command": "run {value} on the host for the status line",
}
# Each ask's danger, for the questions that list them most dangerous first (kimi_cli.frontends.questions):
# 0 runs programs on the host or turns the sandbox off; 1 sends your key or secrets elsewhere, or picks what
# commands run in; 2 waves approvals through or opens the network; 3 a limit lifted or a switch turned back
# on. Keys are the WIDENING names, and the kinds of what a folder's files ask for (trust.file_widenings: the
# part of Widening.key before ":"). tests/attacks/trust/test_trust_table.py checks that every one is ranked.
DANGER: dict[str, int] = {
    # the folder's files
    "mcp": 0, "hooks.scripts": 0, "claude.hooks": 0, "commands": 2, "lsp": 2,  # lsp: a project's server, sandboxed
    # its settings
    "mcp_config": 0, "hooks": 0, "git.allow_hooks": 0, "sandbox.mode": 0,
    "base_url": 1, "provider": 1, "api_key": 1, "providers": 1, "sandbox.env_allow": 1,
    "web.allowed_private_hosts": 1, "sandbox.docker_image": 1,
    "telemetry.otlp_endpoint": 1, "telemetry.otlp_headers": 1, "telemetry.log_prompts": 1,
    "yolo": 2, "approval.allow": 2, "approval.policy": 2, "sandbox.allow_network": 2, "web.allowed_hosts": 2,
    "web.enabled": 2, "web.search": 2,
    "subagents": 3, "max_steps": 3, "max_tokens": 3, "sandbox.docker_memory": 3,
    "retry.max_retries": 3, "retry.base_delay": 3, "retry.max_delay": 3, "retry.request_timeout": 3,
    "sandbox.docker_pids_limit": 3,
    "shell.output_cap": 3,
    "shell.max_background_tasks": 3, "context.max_file_bytes": 3, "checkpoints.max_file_bytes": 3,
    "images.long_edge": 3, "models.*.image_long_edge": 3, "models.*.max_request_bytes": 3,
    "lsp.servers.*.command": 1, "lsp.languages": 2, "lsp.servers.*.languages": 2, "lsp.enabled": 3,
    "lsp.servers.*.enabled": 3,
    "status_line.command": 0,
}  # fmt: skip
UNRANKED = 1  # what nothing above names (the test says so): with the endpoints, never last
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)  # Docker's "512m", "4g"
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def ranked_as(key: str) -> str | None:
    """The DANGER entry an ask's key (Widening.key) falls under: the setting's name (`*` matching any one
    table key, dots in it included: `models.kimi-k3.1-pro.image_long_edge`), else its kind before ":"."""
    if key in DANGER:
        return key
    for name in DANGER:
        if "*" in name and re.fullmatch(r"\.".join(".+" if p == "*" else re.escape(p) for p in name.split(".")), key):
            return name
    kind = key.partition(":")[0]
    return kind if kind in DANGER else None


def danger(key: str) -> int:
    """An ask's rank: 0 most dangerous (see DANGER)."""
    entry = ranked_as(key)
    return UNRANKED if entry is None else DANGER[entry]


def found(data: dict[str, Any], pattern: str) -> list[tuple[list[str], Any]]:
    """Each place `pattern` names in a parsed config, as (the keys on the way, the value)."""
    places: list[tuple[list[str], Any]] = [([], data)]
    for part in pattern.split("."):
        nxt: list[tuple[list[str], Any]] = []
        for keys, node in places:
            if not isinstance(node, dict):
                continue
            if part == "*":
                nxt += [([*keys, str(k)], v) for k, v in node.items()]
            elif part in node:
                nxt.append(([*keys, part], node[part]))
        places = nxt
    return places


def at(data: dict[str, Any], keys: list[str]) -> Any:
    node: Any = data
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


class Defaults(Protocol):
    """kimi's own defaults, which the config model holds (above hostsafe): handed down at start by
    kimi_cli.extensions.hand_down_to_trust, never copied here."""

    def default_of(self, pattern: str) -> Any:
        """kimi's default for a setting (None where there is none: the model table decides)."""
        ...

    def headless_max_steps(self) -> int:
        """The cap on steps headless runs get when max_steps is unset (kimi_cli.config.HEADLESS_MAX_STEPS)."""
        ...


_DEFAULTS: Defaults | None = None


def use_defaults(defaults: Defaults) -> None:
    """The defaults every limit of this process is compared with (kimi_cli.extensions.hand_down_to_trust)."""
    global _DEFAULTS
    _DEFAULTS = defaults


def _defaults() -> Defaults:
    if _DEFAULTS is None:  # comparing with no default would decide nothing safely: refuse
        raise RuntimeError(
            "kimi's setting defaults are not installed: call kimi_cli.extensions.hand_down_to_trust() before "
            "a folder's limits are compared"
        )
    return _DEFAULTS


def default_of(pattern: str) -> Any:
    """kimi's own default for a setting (None where there is none: the model table decides)."""
    return _defaults().default_of(pattern)


def magnitude(pattern: str, value: Any) -> float | None:
    """A limit's value as a number to compare (a size such as "512m" in bytes); None when it is none."""
    if value is None:
        return unset_means(pattern)
    order = LIMIT_ORDER.get(pattern)
    if order is not None:
        return float(order.index(value)) if value in order else None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = SIZE.match(value) if isinstance(value, str) else None
        if match is None:
            return None
        number = float(match.group(1)) * UNITS[match.group(2).lower()]
    return float("inf") if number == 0 and pattern in ZERO_IS_UNLIMITED else number


def unset_means(pattern: str) -> float | None:
    """What an unset limit (None) amounts to, where it stands for a number: no token budget at all; for steps, the cap
    headless runs get (kimi_cli.config.HEADLESS_MAX_STEPS; interactive sessions have none, so a folder's value
    above it is asked about, never taken as a tightening)."""
    if pattern == "max_tokens":
        return float("inf")
    if pattern == "max_steps":
        return float(_defaults().headless_max_steps())
    return None


def above(pattern: str, value: Any, bound: Any) -> bool:
    """A limit's value is looser than `bound`, or either cannot be compared (then it counts as looser)."""
    mine, theirs = magnitude(pattern, value), magnitude(pattern, bound)
    return mine is None or theirs is None or mine > theirs


def widens(pattern: str, value: Any) -> bool:
    rule = WIDENING[pattern]
    if value is None:
        return False
    if rule == "any":
        return True
    if rule == "true":  # the config model reads "yes", 1 and "on" as true: only false is harmless
        return value is not False
    if rule == "nonempty":
        return bool(value)
    if rule == "limit":
        return above(pattern, value, default_of(pattern))
    return value in rule


def widening_settings(config: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(pattern, dotted name, value) of each widening setting in a parsed project config, in table order."""
    return [(pattern, ".".join(keys), value) for pattern in WIDENING for keys, value in found(config, pattern)
            if widens(pattern, value)]  # fmt: skip


def project_layer(project: dict[str, Any], before: dict[str, Any], trusted: bool) -> dict[str, Any]:
    """What of a folder's parsed config applies. Its widening settings only when trusted; a limit that is no
    widening (not above kimi's default: the user was never asked about it) never loosens `before` (the layers
    below: the user's config) or the default, trusted or not; a JOINED list keeps what `before` names."""
    out = copy.deepcopy(project)
    for pattern in JOINED:
        for keys, value in found(out, pattern):
            below = at(before, keys)
            if isinstance(value, list) and isinstance(below, list):
                at(out, keys[:-1])[keys[-1]] = [*below, *(v for v in value if v not in below)]
    for pattern, rule in WIDENING.items():
        for keys, value in found(out, pattern):
            parent = at(out, keys[:-1])
            if widens(pattern, value):
                if not trusted:
                    del parent[keys[-1]]
            elif rule == "limit":
                bound = at(before, keys)
                if above(pattern, value, default_of(pattern) if bound is None else bound):
                    del parent[keys[-1]]  # the value below stays: the user's, else the default
    return out
