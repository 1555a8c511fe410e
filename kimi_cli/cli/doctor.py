"""`kimi doctor`: what a session started here would use, checked for real, each finding with its fix.

The key (where it comes from, never its value), the endpoint and model (the server's /models, with the key),
the context window kimi has learned, each sandbox backend (probed: does it work here, what it enforces), the
MCP and language servers (looked up, none started), this folder's trust, and the config files in effect.
The slow probes (the server, Docker) run side by side so the whole report stays within a few seconds.
`--json` prints the same findings as one object. Exit 1 when a finding is an error (a session would fail).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kimi_cli.util.pipes import survives_closed_pipe

ENDPOINT_TIMEOUT = 2.0  # seconds for the server's /models: the report stays under 3 s
MARK = {"ok": "✓", "info": "·", "warn": "!", "error": "✗"}


@dataclass
class Finding:
    check: str  # key | endpoint | window | sandbox.NAME | mcp.NAME | lsp | trust | config
    status: str  # ok | info | warn | error
    detail: str
    fix: str = ""  # what to do about it; empty when nothing needs doing


@survives_closed_pipe
def cli_main(argv: list[str]) -> int | None:
    """`kimi doctor [--json]`; None lets Typer answer anything else (help, a bad argument)."""
    if any(a not in ("--json",) for a in argv):
        return None
    findings = diagnose(Path.cwd())
    if "--json" in argv:
        from kimi_cli import __version__
        from kimi_cli.util.jsonsafe import dumps

        ok = not any(f.status == "error" for f in findings)
        sys.stdout.write(dumps({"version": __version__, "ok": ok, "findings": [asdict(f) for f in findings]}) + "\n")
    else:
        sys.stdout.write(render(findings))
    return 1 if any(f.status == "error" for f in findings) else 0


def render(findings: list[Finding]) -> str:
    from kimi_cli import __version__
    from kimi_cli.util.sanitize import visible

    lines = [f"kimi {__version__} · python {sys.version.split()[0]} ({sys.executable})"]
    for f in findings:
        lines.append(f"{MARK.get(f.status, '?')} {f.check}: {visible(f.detail, drop_colors=True)}")
        if f.fix:
            lines.append(f"    fix: {visible(f.fix, drop_colors=True)}")
    return "\n".join(lines) + "\n"


def diagnose(workdir: Path) -> list[Finding]:
    from kimi_cli.config import load_config
    from kimi_cli.errors import KimiError

    out = config_files(workdir)
    try:
        config = load_config(workdir)
    except KimiError as exc:
        out.append(Finding("config", "error", str(exc).splitlines()[0], "fix the file and key named here"))
        return out + trust_findings(workdir)
    with ThreadPoolExecutor(max_workers=5) as pool:  # the probes wait on processes and sockets: side by side
        model = pool.submit(model_findings, config)
        boxes = pool.submit(sandbox_findings, workdir, config)
        chosen = pool.submit(_chosen, workdir, config)
        servers = pool.submit(mcp_findings, workdir, config)
        lsp = pool.submit(lsp_findings, workdir, config)
        found = [*model.result(), *boxes.result(), chosen.result(), *servers.result(), *lsp.result()]
    return [*found, *trust_findings(workdir), *out]


def model_findings(config: Any) -> list[Finding]:
    """The key's source, the endpoint and model against the server, the window learned for them."""
    from kimi_cli.config import resolve_endpoint
    from kimi_cli.errors import KimiError
    from kimi_cli.hostsafe.secrets import key_variables, named
    from kimi_cli.util.redact import shown_url

    try:
        endpoint = resolve_endpoint(config)
    except KimiError as exc:
        first = str(exc).splitlines()[0]
        return [Finding("key", "error", first, "run `kimi login`, or export " + named(config.provider or "moonshot"))]
    exported = next((v for v in key_variables(endpoint.provider) if os.environ.get(v)), None)
    if exported:
        key = Finding("key", "ok", f"from ${exported} (the environment beats api_key in config files)")
    elif config.api_key:
        key = Finding("key", "ok", "from api_key in a config file")
    else:
        key = Finding("key", "info", f"none set; {endpoint.provider} at {shown_url(endpoint.base_url)} needs none")
    out = [key, *_endpoint(endpoint)]
    from kimi_cli.llm.endpoint_info import resolve_context_length
    from kimi_cli.llm.models import lookup

    overrides = {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}
    info = lookup(endpoint.model, endpoint.provider, overrides)
    window, source = resolve_context_length(endpoint, config.context_length, info)
    out.append(Finding("window", "ok", f"context {window:,} tokens (from {source})"))
    out.append(Finding("model", "info", f"model table: {info.describe()}"))
    out.append(_effort(config, info))
    return out


def _effort(config: Any, info: Any) -> Finding:
    from kimi_cli.llm.models import resolve_effort

    if info.reasoning == "none":
        return Finding("effort", "info", "not sent: this model takes no reasoning control")
    if config.effort:
        return Finding("effort", "info", f"effort {config.effort} (configured)")
    both = f"{resolve_effort(None, 'interactive')} interactive, {resolve_effort(None, 'headless')} with -p"
    return Finding("effort", "info", f"effort {both}")


def _endpoint(endpoint: Any) -> list[Finding]:
    from kimi_cli.cli.login import check_endpoint
    from kimi_cli.util.redact import shown_url

    where = f"{endpoint.provider} · {shown_url(endpoint.base_url)} · model {endpoint.model}"
    check = check_endpoint(endpoint.base_url, endpoint.api_key if endpoint.api_key != "EMPTY" else "",
                           timeout=ENDPOINT_TIMEOUT)  # fmt: skip
    if check.auth:
        fix = "check the exported key or api_key (kimi login saves a new one); a key exported wins over the files"
        return [Finding("key", "error", f"{shown_url(endpoint.base_url)} refused it ({check.problem})", fix),
                Finding("endpoint", "info", where + ": it answers, but not without a key it takes")]  # fmt: skip
    if not check.ok:
        fix = "start the server, or fix --base-url / KIMI_BASE_URL / base_url (it usually ends in /v1)"
        return [Finding("endpoint", "error", f"{where}: {check.problem}", fix)]
    if check.models and endpoint.model not in check.models:
        listed = ", ".join(check.models[:8]) + (" ..." if len(check.models) > 8 else "")
        return [Finding("endpoint", "warn", f"{where}: the server does not list this model ({listed})",
                        "--model NAME, KIMI_MODEL or model = \"...\" with one it lists")]  # fmt: skip
    return [Finding("endpoint", "ok", f"{where}: the server answers and lists the model")]


def sandbox_findings(workdir: Path, config: Any) -> list[Finding]:
    """Each backend probed for real, what it enforces here, and which one a session would take."""
    import shutil
    import tempfile

    from kimi_cli.sandbox.backends.bwrap import bwrap_works
    from kimi_cli.sandbox.backends.docker import docker_works
    from kimi_cli.sandbox.backends.landlock.backend import landlock_works
    from kimi_cli.sandbox.limits import CANNOT, COMMON, ENFORCES
    from kimi_cli.sandbox.policy import build_policy
    from kimi_cli.sandbox.select import bwrap_advice

    tmp = Path(tempfile.mkdtemp(prefix="kimi-doctor-"))
    try:
        policy = build_policy(workdir, tmp, network=config.sandbox.allow_network)
        with ThreadPoolExecutor(max_workers=3) as pool:
            probes = {"bwrap": pool.submit(bwrap_works, policy), "landlock": pool.submit(landlock_works, policy),
                      "docker": pool.submit(docker_works)}  # fmt: skip
            results = {name: future.result() for name, future in probes.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fixes = {"bwrap": bwrap_advice, "landlock": lambda _w: "needs Linux 5.13+ with Landlock enabled (lsm=landlock)",
             "docker": lambda _w: "start a Docker engine, or add your user to the docker group"}  # fmt: skip
    out = []
    for name, (ok, why) in results.items():
        if ok:
            cannot = "; ".join(CANNOT.get(name, ()))
            extra = f" ({why})" if why else ""
            out.append(Finding(f"sandbox.{name}", "ok", f"works here{extra}. Enforces: {'; '.join(ENFORCES[name])}"
                               + (f". Cannot: {cannot}" if cannot else "")))  # fmt: skip
        else:
            out.append(Finding(f"sandbox.{name}", "warn", f"not usable here: {why}", fixes[name](why)))
    if any(ok for ok, _why in results.values()):
        out.append(Finding("sandbox.every", "info", "each backend also: " + "; ".join(COMMON)))
    return out


def _chosen(workdir: Path, config: Any) -> Finding:
    """The backend a session here takes, and why: the session's own choice (kimi_cli.sandbox.select), made."""
    import shutil
    import tempfile

    from kimi_cli.errors import KimiError
    from kimi_cli.sandbox.policy import build_policy
    from kimi_cli.sandbox.select import choose_sandbox

    mode = config.sandbox.mode
    if mode == "none":
        return Finding("sandbox", "warn", "none (configured): commands run unsandboxed, each one asked",
                       'sandbox.mode = "auto" once a backend above works')  # fmt: skip
    if mode == "docker":
        return Finding("sandbox", "ok", "docker (configured)")
    tmp = Path(tempfile.mkdtemp(prefix="kimi-doctor-"))
    try:
        policy = build_policy(workdir, tmp, network=config.sandbox.allow_network)
        choice = choose_sandbox(mode, policy, 1000, {}, "doctor")
        close = getattr(choice.sandbox, "close_sync", None)
        if close is not None:
            close()
        return Finding("sandbox", "ok", f"{choice.sandbox.name} ({choice.reason}): what a session here uses")
    except KimiError as exc:
        why = " ".join(str(exc).split())[:300]
        return Finding(
            "sandbox",
            "error",
            f"none usable, a session here would stop ({why})",
            "apply a fix above, or --sandbox none",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mcp_findings(workdir: Path, config: Any) -> list[Finding]:
    """Each configured MCP server (the files a session here reads), its program looked up on PATH."""
    import shutil

    from kimi_cli.errors import KimiError
    from kimi_cli.extensions.mcp.config import load_sources

    try:
        sources = load_sources(workdir, [Path(p).expanduser() for p in config.mcp_config])
    except KimiError as exc:
        return [Finding("mcp", "error", str(exc).splitlines()[0], "fix the MCP file named here")]
    if not sources:
        return [Finding("mcp", "info", "no MCP servers configured (kimi mcp add NAME -- COMMAND)")]
    out = []
    for name, (path, server) in sources.items():
        label = f"mcp.{name}"
        if not server.enabled:
            out.append(Finding(label, "info", f"disabled in {path}"))
        elif server.command:
            found = shutil.which(server.command) if "/" not in server.command else server.command
            if found and os.access(found, os.X_OK):
                out.append(Finding(label, "ok", f"stdio: {server.command} found ({found}; from {path})"))
            else:
                out.append(Finding(label, "error", f"stdio: {server.command} is not on PATH (from {path})",
                                   f"install {server.command}, or kimi mcp remove {name}"))  # fmt: skip
        else:
            out.append(Finding(label, "info", f"{server.kind}: {server.url} (from {path}; not contacted)"))
    return out


def lsp_findings(workdir: Path, config: Any) -> list[Finding]:
    """The language server a session here would use per language (kimi_cli.extensions.lsp.wiring)."""
    from kimi_cli.extensions.lsp.wiring import doctor_lines

    out = []
    for line in doctor_lines(config.lsp, workdir):
        missing = "not installed" in line
        fix = "install the server named (e.g. pip install pyright; npm i -g typescript-language-server)"
        out.append(Finding("lsp", "warn" if missing else "ok", line.removeprefix("lsp "), fix if missing else ""))
    return out


def trust_findings(workdir: Path) -> list[Finding]:
    from kimi_cli.hostsafe import trust

    state = trust.current(workdir)
    if not state.asks:
        return [Finding("trust", "ok", f"{state.folder}: its files ask for nothing that needs trust")]
    names = ", ".join(w.key for w in state.asks)
    if state.trusted:
        return [Finding("trust", "ok", f"{state.folder} is trusted ({state.how}): its {names} apply")]
    return [Finding("trust", "warn", f"{state.folder} is not trusted: its {names} are ignored",
                    f"kimi trust {state.folder} (after reading what it asks), or --trust for one session")]  # fmt: skip


def config_files(workdir: Path) -> list[Finding]:
    """The config files a session here reads, and the variables that override them."""
    from kimi_cli.util.paths import kimi_home

    home = kimi_home()
    candidates = [home / "config.toml", workdir / ".kimi" / "config.toml", home / "mcp.json",
                  workdir / ".kimi" / "mcp.json", workdir / ".claude" / "settings.json",
                  workdir / ".claude" / "settings.local.json"]  # fmt: skip
    present = [str(p) for p in candidates if p.is_file()]
    env = sorted(v for v in os.environ if v.startswith("KIMI_") and not v.endswith("API_KEY"))
    detail = ("files: " + ", ".join(present)) if present else "no config files (defaults)"
    if env:
        detail += "; environment: " + ", ".join(env)
    return [Finding("config", "ok", detail)]
