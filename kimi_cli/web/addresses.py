"""Which addresses a fetch may connect to: public ones, unless the host is explicitly allowed."""

from __future__ import annotations

import fnmatch
import ipaddress


def is_public(address: str) -> bool:
    """False for loopback, private, link-local (169.254.169.254), multicast, reserved and unspecified."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        # IPv4 carried inside IPv6 (mapped ::ffff:a.b.c.d, 6to4 2002:AABB:CCDD::, Teredo's client): the IPv4
        # address is where the packets end up, so it must be public too.
        embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if any(v4 is not None and not is_public(str(v4)) for v4 in embedded):
            return False
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
    return not (
        ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast or ip.is_reserved
        or ip.is_unspecified or getattr(ip, "is_site_local", False)
    ) and ip.is_global  # fmt: skip


def host_matches(host: str, rules: list[str]) -> str | None:
    """The first rule (`docs.python.org`, `*.github.com`) that covers host, or None."""
    host = host.lower().rstrip(".")
    for rule in rules:
        pattern = rule.lower().rstrip(".")
        if host == pattern or fnmatch.fnmatchcase(host, pattern) or (pattern.startswith("*.") and host == pattern[2:]):
            return rule
    return None
