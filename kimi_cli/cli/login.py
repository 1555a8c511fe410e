"""`kimi login`: the first-run setup. Asks for a provider and a key (or a server's base URL), checks them
against the server's /v1/models, and writes ~/.kimi/config.toml (mode 600, other settings kept).

Interactive on a terminal; scripts pass everything as flags (`--api-key-stdin` reads the key from stdin,
so it never appears in a process listing or shell history).
"""

from __future__ import annotations

import getpass
import json
import re
import sys
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.config import DEFAULT_MODEL, PROVIDER_DEFAULTS
from kimi_cli.hostsafe.fs import write_private
from kimi_cli.util import jsonsafe
from kimi_cli.util.paths import kimi_home
from kimi_cli.util.sanitize import visible

CHECK_TIMEOUT = 10.0
PROVIDERS = {
    "1": ("moonshot", "Moonshot's hosted API (Kimi K3.1 Pro; needs an API key from platform.moonshot.ai)"),
    "2": ("openai", "an OpenAI-compatible server at a base URL (llama.cpp, vLLM, Ollama, a router)"),
    "3": ("local", "kimi's own local engine (`kimi engine serve`, http://127.0.0.1:8000/v1)"),
}
KEYS = ("provider", "base_url", "model", "api_key")


@dataclass
class Check:
    ok: bool
    models: list[str] = field(default_factory=list)
    problem: str = ""  # why not, in words
    auth: bool = False  # the server refused the key


def check_endpoint(base_url: str, key: str, timeout: float = CHECK_TIMEOUT) -> Check:
    """GET {base_url}/models with the key: the models listed, or what went wrong."""
    from kimi_cli.util.redact import shown_url, without_user_info

    # urllib refuses a URL with user info (http://user:pw@proxy/v1 reads as a bad port): it is left out of the
    # request, as a session's requests leave it out (llm.http1 connects to the host and sends the key alone)
    request = urllib.request.Request(without_user_info(base_url).rstrip("/") + "/models",
                                     headers={"accept": "application/json"})  # fmt: skip
    shown = shown_url(base_url)  # what the problems name: a password in the URL hidden
    if key:
        request.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data: Any = jsonsafe.loads(response.read(4_000_000))  # the server's answer: bounded
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return Check(False, problem=f"the server refused the key (HTTP {exc.code})", auth=True)
        hint = "is the base URL right? It usually ends in /v1"
        return Check(False, problem=f"{shown}/models answered HTTP {exc.code}; {hint}")
    except urllib.error.URLError as exc:
        return Check(False, problem=f"cannot reach {shown}: {exc.reason}")
    except (OSError, ValueError) as exc:
        return Check(False, problem=f"{shown}/models gave no model list ({type(exc).__name__}: {exc})")
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return Check(False, problem=f"{shown}/models answered without a model list")
    return Check(True, [str(e.get("id")) for e in entries if isinstance(e, dict) and e.get("id")])


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def updated_config(text: str, values: dict[str, str | None]) -> str:
    """`text` (a config.toml) with these top-level keys set (None: removed); everything else kept as it was."""
    lines = text.splitlines()
    first_table = next((i for i, line in enumerate(lines) if re.match(r"^\s*\[", line)), len(lines))
    head, rest = lines[:first_table], lines[first_table:]
    pattern = re.compile(r"^\s*(" + "|".join(re.escape(k) for k in values) + r")\s*=")
    head = [line for line in head if not pattern.match(line)]
    while head and not head[-1].strip():
        head.pop()
    new = [f"{k} = {_toml_string(v)}" for k, v in values.items() if v is not None]
    out = [*head, *new]
    if rest:
        out += ["", *rest]
    result = "\n".join(out).strip("\n") + "\n"
    tomllib.loads(result)  # never write a file kimi cannot read back
    return result


def save(values: dict[str, str | None], path: Path | None = None) -> Path:
    path = path or kimi_home() / "config.toml"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    write_private(path, updated_config(text, values))
    return path


class Asker:
    """Questions on the terminal; EOF or Ctrl-C ends the setup without writing anything."""

    def line(self, question: str, default: str = "") -> str:
        shown = f"{question} [{default}]: " if default else f"{question}: "
        answer = input(shown).strip()
        return answer or default

    def secret(self, question: str) -> str:
        return getpass.getpass(f"{question}: ").strip()

    def pick(self, question: str, choices: list[str], default: str) -> str:
        """An arrow-key picker on a terminal (kimi_cli.frontends.terminal.picker), the default marked; a line
        where the output is not a terminal. Esc takes the default."""
        if not sys.stdout.isatty():
            return self.line(question, default)
        from kimi_cli.frontends.terminal.picker import pick_once

        index = pick_once(question, choices, choices.index(default) if default in choices else 0)
        return default if index is None else choices[index]

    def key(self, question: str, keys: str, default: str) -> str:
        """One key, no Enter, on a terminal (Enter takes `default`, which the question shows)."""
        from kimi_cli.frontends.terminal.keys import ask_key

        return ask_key(f"{question} (Enter = {default}) › ", keys, default)


def run_login(
    provider: str | None,
    base_url: str | None,
    model: str | None,
    key_from_stdin: bool,
    check: bool = True,
    asker: Asker | None = None,
    next_step: str = "Run `kimi` for a session, or `kimi -p TASK`.",
) -> int:
    asker = asker or Asker()
    interactive = sys.stdin.isatty() and not key_from_stdin
    try:
        return _login(provider, base_url, model, key_from_stdin, check, interactive, asker, next_step)
    except (EOFError, KeyboardInterrupt):
        sys.stderr.write("\nkimi login: cancelled; nothing was written\n")
        return 4


def _login(
    provider: str | None, base_url: str | None, model: str | None, key_from_stdin: bool, check: bool,
    interactive: bool, asker: Asker, next_step: str,
) -> int:  # fmt: skip
    say = print
    if provider is None and interactive:
        say("Which model provider?")
        for number, (_, text) in PROVIDERS.items():
            say(f"  {number}  {text}")
        choice = asker.key("provider: 1, 2 or 3", "123", "1")
        provider = PROVIDERS.get(choice, (choice, ""))[0]
    provider = provider or "moonshot"
    if provider not in PROVIDER_DEFAULTS:
        sys.stderr.write(f"kimi login: unknown provider {visible(provider)!r}: moonshot, openai or local\n")
        return 2
    default_url = PROVIDER_DEFAULTS[provider]["base_url"] or ""
    if base_url is None and interactive and provider != "moonshot":
        base_url = asker.line("base URL of the server (it usually ends in /v1)", default_url)
    base_url = (base_url or default_url).rstrip("/")
    if not re.match(r"^https?://", base_url):
        sys.stderr.write(f"kimi login: the base URL must start with http:// or https://, not {visible(base_url)!r}\n")
        return 2
    key = ""
    if key_from_stdin:
        key = sys.stdin.readline().strip()
    for attempt in range(3):
        if not key_from_stdin and interactive and (attempt or not key):
            optional = provider != "moonshot"
            key = asker.secret("API key" + (" (Enter if the server needs none)" if optional else ""))
        if provider == "moonshot" and not key:
            sys.stderr.write("kimi login: Moonshot's API needs a key (get one at https://platform.moonshot.ai)\n")
            if not interactive:
                return 2
            continue
        if not check:
            result = Check(True)
            break
        say(f"checking {base_url}/models ...")
        result = check_endpoint(base_url, key)
        if result.ok or not result.auth or not interactive:
            break
        say(f"  {visible(result.problem)}; try again")
    else:
        sys.stderr.write("kimi login: no key that the server accepts; nothing was written\n")
        return 2
    if not result.ok:
        sys.stderr.write(f"kimi login: {visible(result.problem)}\n")
        if result.auth or not interactive or asker.key("save these settings anyway? y/N", "yn", "n") != "y":
            sys.stderr.write("kimi login: nothing was written\n")
            return 2 if result.auth else 5
    elif result.models:
        shown = ", ".join(visible(m, one_line=True) for m in result.models[:10])
        say(f"  ok: the server offers {len(result.models)} model{'s' if len(result.models) != 1 else ''}: {shown}")
    model = _pick_model(provider, model, result.models, interactive, asker)
    if model and result.models and model not in result.models:
        say(f"  note: the server does not list {visible(model)!r}; requests may fail until it does")
    values: dict[str, str | None] = {
        "provider": provider,
        "base_url": base_url if base_url != PROVIDER_DEFAULTS[provider]["base_url"] else None,
        "model": model or None,
        "api_key": key or None,
    }
    path = save(values)
    say(f"saved to {path} (readable by you only). {next_step}")
    return 0


def _pick_model(provider: str, model: str | None, listed: list[str], interactive: bool, asker: Asker) -> str:
    if model:
        return model
    default = DEFAULT_MODEL if provider == "moonshot" or DEFAULT_MODEL in listed else (listed[0] if listed else "")
    if interactive and len(listed) > 1:
        return asker.pick("model", listed, default)
    return default


def first_run(flags: dict[str, Any]) -> bool:
    """Interactive `kimi` with no provider set up: this same login, in place (the flags given, such as
    --provider or --base-url, answer its questions); True when it saved settings for the session to start."""
    print("kimi has no model provider set up yet: let's set one up now (Ctrl-C leaves; `kimi login` does the same).")
    provider, base_url, model = (flags.get(k) for k in ("provider", "base_url", "model"))
    code = run_login(provider, base_url, model, key_from_stdin=False, next_step="Starting the session.")
    return code == 0
