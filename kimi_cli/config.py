"""Layered, typed configuration: defaults < ~/.kimi/config.toml < .kimi/config.toml < env < flags.

The project layer (.kimi/config.toml in the workspace) loses its widening settings unless the folder is
trusted (kimi_cli.hostsafe.trust): the workspace may be a repository someone else wrote. It is never read here: it
comes from the snapshot the trust decision was made on (kimi_cli.hostsafe.project_settings), so what applies is
exactly what was decided on.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from kimi_cli.errors import ConfigError, MissingKey
from kimi_cli.hostsafe import trust
from kimi_cli.hostsafe.secrets import key_variables, named
from kimi_cli.util.paths import kimi_home

ProviderKind = Literal["moonshot", "local", "openai"]
SandboxMode = Literal["auto", "bwrap", "landlock", "docker", "none"]

DEFAULT_MODEL = "kimi-k3.1-pro"
HEADLESS_MAX_STEPS = 1000
# The variables each provider's key is read from are in kimi_cli.hostsafe.secrets (the one table of them).
PROVIDER_DEFAULTS: dict[str, dict[str, Any]] = {
    "moonshot": {"base_url": "https://api.moonshot.ai/v1"},
    "local": {"base_url": "http://127.0.0.1:8000/v1"},
    "openai": {"base_url": None},
}
KEY_REQUIRED = {"moonshot"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderSettings(_Strict):
    base_url: str | None = None
    model: str | None = None


class RetrySettings(_Strict):
    max_retries: int = Field(default=6, ge=0, le=50)
    base_delay: float = Field(default=1.0, ge=0)
    max_delay: float = Field(default=60.0, gt=0)
    request_timeout: float = Field(default=600.0, gt=0)  # seconds of silence, not of the whole answer (llm/provider)


class SandboxSettings(_Strict):
    mode: SandboxMode = "auto"
    allow_network: bool = False
    hidden_paths: list[str] = Field(default_factory=list)
    env_allow: list[str] = Field(default_factory=list)  # names or globs passed to commands as they are
    env_deny: list[str] = Field(default_factory=list)  # never passed, even when allowed
    docker_image: str = "kimi-sandbox:latest"
    docker_memory: str = "4g"
    docker_pids_limit: int = Field(default=1024, ge=16)


class ShellSettings(_Strict):
    default_timeout: int = Field(default=60, ge=1, le=600)
    output_cap: int = Field(default=30_000, ge=1000)
    max_background_tasks: int = Field(default=4, ge=0, le=64)


class GitSettings(_Strict):
    co_author_trailer: str | None = None
    author_name: str | None = None
    author_email: str | None = None
    allow_hooks: bool = False


class ContextSettings(_Strict):
    pack: bool = True
    budget_ratio: float = Field(default=0.6, gt=0, le=0.95)
    budget: int | None = Field(default=None, ge=1000)
    max_file_bytes: int = Field(default=1_000_000, ge=1000)
    compact_at: float = Field(default=0.85, ge=0.01, le=0.99)


class WebSettings(_Strict):
    enabled: bool = True  # false: no FetchURL and no SearchWeb
    allowed_hosts: list[str] = Field(default_factory=list)  # fetched without asking: docs.python.org, *.github.com
    allowed_private_hosts: list[str] = Field(default_factory=list)  # loopback/private hosts that may be fetched
    search: bool = True  # Moonshot's built-in $web_search, with the moonshot provider
    fetch_timeout: float = Field(default=20.0, gt=0, le=600)  # seconds for a whole fetch, redirects included


class CheckpointSettings(_Strict):
    max_file_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)  # larger untracked files are not snapshotted


class ApprovalSettings(_Strict):
    policy: Literal["auto", "ask", "never"] = "auto"
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class PricingSettings(_Strict):
    """Dollars per million tokens. Unset: the model table's prices (kimi_cli/llm/models.toml); a value set
    here overrides the table's for every model (a negotiated rate, a proxy's markup)."""

    input: float | None = Field(default=None, ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)


class ModelOverride(_Strict):
    """`[models."ID"]`: add a model to the table or change one of its facts (same keys as models.toml)."""

    name: str | None = None
    aliases: list[str] | None = None
    context_window: int | None = Field(default=None, ge=1024)
    image_input: bool | None = None
    reasoning: Literal["effort", "thinking", "none"] | None = None
    effort_levels: list[str] | None = None
    thinking_can_disable: bool | None = None
    price_input: float | None = Field(default=None, ge=0)
    price_cached_input: float | None = Field(default=None, ge=0)
    price_output: float | None = Field(default=None, ge=0)
    price_source: str | None = None
    max_tools: int | None = Field(default=None, ge=1)
    tools_in_messages: bool | None = None  # false for a relay that refuses a system message's `tools`
    max_request_bytes: int | None = Field(default=None, ge=10_000)
    image_patch: int | None = Field(default=None, ge=1)
    image_long_edge: int | None = Field(default=None, ge=64, le=16384)


class TelemetrySettings(_Strict):
    """OpenTelemetry export (kimi_cli/telemetry): off unless an endpoint is set here or in the standard
    OTEL_EXPORTER_OTLP_* variables. OTLP over HTTP/protobuf; `otlp_endpoint` is the collector's base URL
    (/v1/traces and /v1/metrics are added). Prompt, answer and tool text are sent only with log_prompts."""

    otlp_endpoint: str | None = None
    otlp_headers: dict[str, str] = Field(default_factory=dict)  # e.g. an auth header the collector wants
    log_prompts: bool = False


class ImageSettings(_Strict):
    long_edge: int | None = Field(default=None, ge=64, le=16384)  # None: the model table's bound


class NotificationSettings(_Strict):
    """`[notifications]` (kimi_cli.frontends.terminal.notify): tell the user when a turn ends or kimi waits
    for an answer. `when = "unfocused"`: only while the terminal reports it is not in focus."""

    enabled: bool = True
    method: Literal["auto", "osc9", "osc777", "bell"] = "auto"  # auto: what the terminal shows
    when: Literal["unfocused", "always"] = "unfocused"
    desktop: bool = True  # notify-send too, where it exists


class StatusLineSettings(_Strict):
    """`[status_line]` (kimi_cli.frontends.terminal.status_command): a command fed Claude Code's statusLine
    JSON on stdin; the first line it prints is shown on the status line. It runs on the host."""

    command: str = ""
    timeout: float = Field(default=2.0, gt=0, le=10)  # seconds one run may take


class LspServerSettings(_Strict):
    """One language server (kimi_cli.extensions.lsp.servers): a built-in one changed, or one of the user's own."""

    command: list[str] = Field(default_factory=list)  # argv; empty: the built-in server's own program
    languages: list[str] = Field(default_factory=list)  # empty: the built-in server's languages
    enabled: bool = True


class LspSettings(_Strict):
    """Language servers: diagnostics after edits, and the Diagnostics, Definition and References tools."""

    enabled: bool = True
    timeout: float = Field(default=2.0, gt=0, le=30)  # seconds an edit waits for its diagnostics
    start_timeout: float = Field(default=10.0, gt=0, le=60)  # the same, when the edit has to start the server
    max_lines: int = Field(default=20, ge=1, le=200)  # diagnostics lines appended to an edit's result
    # language -> server names, each run when found (python = ["pyright", "ruff"]); [] turns a language off
    languages: dict[str, list[str]] = Field(default_factory=dict)
    servers: dict[str, LspServerSettings] = Field(default_factory=dict)


HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)  # the same names, in the same order, as a tuple
HOOK_TIMEOUT = 60.0


class McpSettings(_Strict):
    """`[mcp]`: how long the first request waits for MCP servers that are still starting (they start beside
    the pack; a server ready by then has its tools in request 1, a later one joins as it becomes ready).
    A server's own `startup_wait` in its mcp.json entry overrides it; its `startup_timeout` stays the time
    after which it counts as failed (kimi_cli.extensions.mcp)."""

    startup_timeout: float = Field(default=5.0, ge=0, le=120)


class HookSettings(_Strict):
    """One `[[hooks.EVENT]]` table, as written in a config file (kimi_cli.extensions.hooks runs them)."""

    command: str = Field(min_length=1)
    matcher: str | None = None
    timeout: float = Field(default=HOOK_TIMEOUT, gt=0, le=3600)
    on_failure: Literal["continue", "block"] = "continue"


HooksTable = dict[HookEvent, list[HookSettings]]


class Config(_Strict):
    """The whole configuration after merging every layer."""

    provider: ProviderKind | None = None  # None: moonshot, or openai when the base URL is not Moonshot's
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    max_steps: int | None = Field(default=None, ge=1)  # None: no cap interactive, HEADLESS_MAX_STEPS headless
    max_output_tokens: int = Field(default=32_768, ge=256)  # max_tokens per answer, capped by the window
    # The HTTP client for model requests. direct: kimi's own (kimi_cli/llm/http1.py; httpx when a proxy is set)
    transport: Literal["direct", "httpx", "openai"] = "direct"
    mcp_config: list[str] = Field(default_factory=list)  # --mcp-config files, beside ~/.kimi and .kimi/mcp.json
    thinking: bool | None = None  # False: ask a local engine to skip K3's thinking (chat_template_kwargs)
    subagents: bool = True  # the Agent tool
    max_tokens: int | None = Field(default=None, ge=1)
    context_length: int | None = Field(default=None, ge=1024)  # None: ask the server, else the model's default
    yolo: bool = False
    providers: dict[ProviderKind, ProviderSettings] = Field(default_factory=dict)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    git: GitSettings = Field(default_factory=GitSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    grep_timeout: float = Field(default=20.0, gt=0, le=600)  # seconds before a Grep search is stopped
    pricing: PricingSettings = Field(default_factory=PricingSettings)
    effort: Literal["low", "high", "max"] | None = None  # None: high interactive, max headless and ci-repair
    models: dict[str, ModelOverride] = Field(default_factory=dict)
    images: ImageSettings = Field(default_factory=ImageSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    lsp: LspSettings = Field(default_factory=LspSettings)
    notifications: NotificationSettings = Field(default_factory=NotificationSettings)
    status_line: StatusLineSettings = Field(default_factory=StatusLineSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    hooks: HooksTable = Field(
        default_factory=dict
    )  # [[hooks.EVENT]]: read per file by kimi_cli.extensions.hooks.config


def default_of(pattern: str) -> Any:
    """kimi's own default for a setting, by its dotted name (`*`: any key of a table of tables); None where
    there is none (the model table decides). What trust compares a folder's limits with
    (kimi_cli.hostsafe.trust_rules.Defaults, handed down by kimi_cli.extensions.hand_down_to_trust)."""
    import typing

    model: Any = Config
    info: Any = None
    for part in pattern.split("."):
        if part == "*":
            model = typing.get_args(info.annotation)[1]
            continue
        info = model.model_fields[part]
        model = info.annotation
    return info.get_default(call_default_factory=True)


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: the resolved provider, URL, model and key."""

    provider: str
    base_url: str
    model: str
    api_key: str

    def __repr__(self) -> str:  # never print the key
        return f"Endpoint(provider={self.provider!r}, base_url={self.base_url!r}, model={self.model!r})"


def _format_validation(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for item in err.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(top level)"
        lines.append(f"  {key}: {item['msg']}")
    return "\n".join(lines)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        from kimi_cli.hostsafe.settings_read import read_settings_text

        data = tomllib.loads(read_settings_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid configuration in {path}: not valid TOML ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from exc
    return _validated(data, path)


def _validated(data: dict[str, Any], path: Path) -> dict[str, Any]:
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, str(path))) from exc
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_layer(environ: dict[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    pairs = (
        ("KIMI_PROVIDER", "provider"),
        ("KIMI_BASE_URL", "base_url"),
        ("KIMI_MODEL", "model"),
        ("KIMI_TRANSPORT", "transport"),
        ("KIMI_CONTEXT_LENGTH", "context_length"),
        ("KIMI_EFFORT", "effort"),
    )
    for var, key in pairs:
        if environ.get(var):
            layer[key] = environ[var]
    return layer


def load_config(
    workspace: Path,
    flags: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    folder: trust.FolderTrust | None = None,
) -> Config:
    """Merge every layer and validate; raises ConfigError naming the file and key on bad input. The project
    layer is the one of `folder` (a session's trust decision), else of trust.current(workspace)."""
    env = dict(os.environ) if environ is None else environ
    merged: dict[str, Any] = {}
    user_file = kimi_home() / "config.toml"
    if user_file.is_file():
        merged = _deep_merge(merged, _read_toml(user_file))
    state = folder if folder is not None else trust.current(workspace)
    project = state.project
    if project.config_error:
        raise ConfigError(project.config_error)
    if project.config_present:
        # The folder's own settings that widen what kimi may do apply only to a trusted folder
        # (kimi_cli.hostsafe.trust).
        layer = trust.project_layer(state, merged)
        merged = _deep_merge(merged, _validated(layer, project.config_path))
    merged = _deep_merge(merged, _env_layer(env))
    merged = _deep_merge(merged, {k: v for k, v in (flags or {}).items() if v is not None})
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, "the merged configuration (files, environment, flags)")) from exc


def resolve_endpoint(config: Config, environ: dict[str, str] | None = None) -> Endpoint:
    """Pick base URL, model and key for the chosen provider, or explain what is missing."""
    env = dict(os.environ) if environ is None else environ
    provider = config.provider or default_provider(config.base_url)
    config = config.model_copy(update={"provider": provider})
    defaults = PROVIDER_DEFAULTS[provider]
    profile = config.providers.get(provider, ProviderSettings())
    base_url = config.base_url or profile.base_url or defaults["base_url"]
    if config.provider == "local" and not (config.base_url or profile.base_url):
        base_url = _served_engine_url() or base_url
    if not base_url:
        raise ConfigError(
            f"provider '{config.provider}' needs a base URL: pass --base-url URL, set KIMI_BASE_URL, "
            f"or set providers.{config.provider}.base_url in ~/.kimi/config.toml"
        )
    model = config.model or profile.model or (_served_engine_model() if config.provider == "local" else None)
    # flags > env > project > user: an exported key beats `api_key` in any config file (DESIGN.md's order)
    key = next((env[v] for v in key_variables(provider) if env.get(v)), "")
    if not key and config.api_key:
        key = config.api_key.get_secret_value()
    if not key and config.provider in KEY_REQUIRED:
        raise MissingKey(
            f"no API key for provider '{config.provider}': run `kimi login` to set one up, or export one of "
            f"{named(config.provider)}. Get a key at https://platform.moonshot.ai"
        )
    return Endpoint(provider, base_url.rstrip("/"), model or DEFAULT_MODEL, key or "EMPTY")


MOONSHOT_HOSTS = ("moonshot.ai", "moonshot.cn", "kimi.ai", "kimi.com")


def default_provider(base_url: str | None) -> ProviderKind:
    """No provider named: a base URL that is not Moonshot's means an OpenAI-compatible server (no key needed)."""
    if not base_url:
        return "moonshot"
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return "moonshot" if any(host == h or host.endswith("." + h) for h in MOONSHOT_HOSTS) else "openai"


def _served_engine() -> dict[str, Any]:
    from kimi_cli.util import jsonsafe

    path = kimi_home() / "engine" / "served.json"
    try:
        data = jsonsafe.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _served_engine_url() -> str | None:
    url = _served_engine().get("base_url")
    return url if isinstance(url, str) else None


def _served_engine_model() -> str | None:
    model = _served_engine().get("model")
    return model if isinstance(model, str) else None
