"""The one redactor: what kimi shows or writes of text that may hold a secret. Debug logs, MCP configs and
errors, session exports and telemetry all go through it.

Secrets show up in three ways:
- values kimi knows are secret (the API key, a header's token), registered with `register_secret`: each
  becomes `[REDACTED]` wherever it appears;
- secrets a structure names: a URL's password (or a user name standing alone, often a token itself),
  secret-named query and fragment parameters (`?access_token=`, `#token=`, `;sig=`), `--api-key X`,
  `TOKEN=X`, `"password": "X"`, `Authorization: Bearer X`, mcp-remote's `--header "Authorization: Bearer X"`;
- tokens that have a recognisable shape (GitHub, GitLab, Slack, npm, PyPI, Hugging Face, AWS key ids, Google
  API keys, `sk-...` API keys, JWTs, PEM private keys).
The last two become `[hidden]`. Anything else is kept byte for byte.
"""

from __future__ import annotations

import functools
import re
from typing import ClassVar

SECRET_WORDS = ("token", "key", "secret", "pass", "pwd", "auth", "bearer", "credential", "sig", "jwt")
HEADER_OPTIONS = ("--header", "-H", "--headers")
HEADER = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*:\s*(.*)$")
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
PAIR_SEPARATOR = re.compile(r"([&;])")
HIDDEN = "[hidden]"
REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8  # shorter "keys" are dummies for local servers (e.g. "x"), not secrets

# Tokens by their shape; each must start where a word starts (`(?<![\w-])`).
TOKEN_SHAPES = (
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{22,}",
    r"glpat-[A-Za-z0-9_-]{20,}",
    r"xox[abeprs]-[A-Za-z0-9-]{10,}",
    r"npm_[A-Za-z0-9]{30,}",
    r"pypi-[A-Za-z0-9_-]{40,}",
    r"hf_[A-Za-z0-9]{30,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"sk-[A-Za-z0-9_-]{20,}",
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
)
NAME_ENDINGS = ("password", "passwd", "secret", "token", "apikey", "api_key", "access_key", "private_key",
                "secret_key", "credentials", "auth")  # fmt: skip


class _Patterns:
    """The text patterns, compiled at the first redaction rather than at import (one costs ~7 ms to
    compile; `kimi -p` imports this module on every start)."""

    def __init__(self) -> None:
        self.tokens = re.compile(r"(?<![\w-])(?:" + "|".join(TOKEN_SHAPES) + r")")
        self.pem = re.compile(r"(-----BEGIN [A-Z ]*PRIVATE KEY-----)[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)")
        # a token has a digit; prose after "bearer" has none
        self.bearer = re.compile(r"(?i)\b(bearer\s+)(?=\S*\d)([A-Za-z0-9._~+/=-]{8,})")
        self.auth_header = re.compile(
            r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:basic\s+|token\s+|bearer\s+)?)([A-Za-z0-9._~+/=-]{8,})"
        )
        # `NAME=value`, `NAME: value`, `"name": "value"`: a secret-looking name and a value that looks like data;
        # a call or an index after the value is code, not a value.
        self.assignment = re.compile(
            r"""(?P<name>["']?[A-Za-z_][A-Za-z0-9_.-]*["']?)(?P<sep>\s*[=:]\s*)(?P<quote>["']?)"""
            r"""(?P<value>[^\s"'`,;&(){}\[\]<>$]{8,}+)(?![(\[])"""
        )
        self.dotted_name = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")  # self.token, os.environ: code


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


class Secrets:
    """The values registered as secret for this process (the API key, a header's token)."""

    values: ClassVar[set[str]] = set()


def register_secret(value: str | None) -> None:
    """Make sure `value` never appears in a log line, an export or a span (the API key, a header token)."""
    if value and len(value) >= MIN_SECRET_LEN:
        Secrets.values.add(value)


def redact(text: str) -> str:
    """`text` with every secret kimi can recognise hidden (see the module's docstring)."""
    for value in sorted(Secrets.values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    found = _patterns()
    if "-----BEGIN" in text:
        text = found.pem.sub(lambda m: f"{m.group(1)}{HIDDEN}{m.group(2)}", text)
    text = found.tokens.sub(HIDDEN, text)
    text = found.auth_header.sub(lambda m: m.group(1) + HIDDEN, text)
    text = found.bearer.sub(lambda m: m.group(1) + HIDDEN, text)
    text = found.assignment.sub(_assignment, text)
    if "://" in text:
        text = redacted_urls_in(text)
    return text


def _assignment(match: re.Match[str]) -> str:
    name = match.group("name").strip("\"'")
    value = match.group("value")
    if (
        value in (HIDDEN, REDACTED)
        or _patterns().dotted_name.match(value)
        or "://" in value
        or not _secret_assigned(name)
    ):
        return match.group(0)
    return f"{match.group('name')}{match.group('sep')}{match.group('quote')}{HIDDEN}"


def _secret_assigned(name: str) -> bool:
    """An environment-style name with a secret word (GITHUB_TOKEN, DB_PASSWORD), or a name ending in one of
    the words a secret's key ends in (password, api_key, client_secret); `primary_key`, `monkey` are not."""
    if name.isupper() and secret_name(name):
        return True
    return name.lower().replace("-", "_").endswith(NAME_ENDINGS)


def secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


def redacted_url(url: str) -> str:
    """`https://user:pw@host/mcp?token=X&v=2#sig=Y` as `https://user:[hidden]@host/mcp?token=[hidden]&v=2#sig=[hidden]`;
    a user name without a password (often a token itself) is hidden too. Anything else is kept as written."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{HIDDEN}@{host}" if ":" in user else f"{HIDDEN}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, _pairs(parts.query), _pairs(parts.fragment)))


def _pairs(text: str) -> str:
    """`a=1&token=X;sig=Y` with the values of secret-named keys hidden; the rest byte for byte."""
    if "=" not in text:
        return text
    out = []
    for piece in PAIR_SEPARATOR.split(text):
        key, eq, _value = piece.partition("=")
        out.append(f"{key}={HIDDEN}" if eq and secret_name(key) else piece)
    return "".join(out)


def shown_url(url: str) -> str:
    """A URL as a message names it: redacted_url's form when it has a part that can hold a secret (user
    info, a query, a fragment), else exactly as written."""
    return redacted_url(url) if any(c in url for c in "@?#;") else url


def without_user_info(url: str) -> str:
    """`url` with any user:password@ taken out of its host part, the rest as written: what urllib can request
    (it reads http://user:pw@host/v1 as a bad port) and what a session's requests send (the key goes as the
    Bearer token; llm.http1 connects to the host alone)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def redacted_urls_in(text: str) -> str:
    """Every URL in a message (an HTTP error quotes the URL it requested) with its secrets hidden."""
    return URL_IN_TEXT.sub(lambda m: redacted_url(m.group(0)), text)


def redacted_args(args: list[str]) -> list[str]:
    """`--api-key X`, `--token=X`, `API_KEY=X`, `--header "Authorization: Bearer X"`: the value is hidden,
    the option and the header's name kept."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        name, eq, _ = arg.partition("=")
        header = HEADER.match(arg)
        if hide_next:
            out.append(HIDDEN)
        elif header and secret_name(header.group(1)):
            out.append(f"{header.group(1)}: {HIDDEN}")
        elif eq and secret_name(name):
            out.append(f"{name}={HIDDEN}")
        else:
            out.append(redacted_url(arg) if "://" in arg else arg)
        hide_next = not eq and arg.startswith("-") and arg not in HEADER_OPTIONS and secret_name(arg)
    return out
