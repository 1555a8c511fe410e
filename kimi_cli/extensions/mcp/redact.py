"""What may be shown of an MCP server's configuration and errors: never a token, a password or a key.

Secrets ride in many places of a server's entry: header and env values, `--api-key X`/`TOKEN=X`
arguments, mcp-remote's `--header "Authorization: Bearer X"`, a URL's password, a token used as the URL's
user name, query or fragment parameters (`?access_token=`, `#token=`, `;sig=`), and the text of a
transport's error, which quotes the URL it requested.
"""

from __future__ import annotations

import re

SECRET_WORDS = ("token", "key", "secret", "pass", "pwd", "auth", "bearer", "credential", "sig", "jwt")
HEADER_OPTIONS = ("--header", "-H", "--headers")
HEADER = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*:\s*(.*)$")
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
PAIR_SEPARATOR = re.compile(r"([&;])")
HIDDEN = "[hidden]"


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
