"""A fetched body as text for the model: HTML as markdown (main content), JSON and text as they are.

markdownify over a cleaned tree, rather than trafilatura's main-content extractor: both were tried on
documentation pages; trafilatura drops navigation well but turns code blocks into inline code and
loses table layout, costs ~145 ms to import (lxml and friends) and ~170 ms on a first page.
markdownify keeps code fences and tables; the navigation, headers, footers, asides and scripts it would
keep are removed first, and <main> or <article> is used when the page has one.
"""

from __future__ import annotations

import json

from kimi_cli.util import jsonsafe

DROP = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg", "iframe", "button")


def html_to_markdown(html: str) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(DROP):
        tag.decompose()
    main = soup.find("main") or soup.find("article") or soup.body or soup
    text = MarkdownConverter(heading_style="ATX", code_language="", escape_misc=False).convert_soup(main)
    lines = [line.rstrip() for line in text.splitlines()]
    compact: list[str] = []
    for line in lines:
        if line or (compact and compact[-1]):
            compact.append(line)
    body = "\n".join(compact).strip()
    return f"# {title}\n\n{body}" if title and not body.startswith("# ") else body


def render_body(content_type: str, body: bytes) -> str:
    kind = content_type.split(";", 1)[0].strip().lower()
    charset = "utf-8"
    if "charset=" in content_type:
        charset = content_type.split("charset=", 1)[1].split(";", 1)[0].strip() or "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (
        not kind and text.lstrip()[:15].lower().startswith("<!doctype html")
    ):
        return html_to_markdown(text)
    if kind == "application/json" or kind.endswith("+json"):
        try:
            return json.dumps(jsonsafe.loads(text), indent=1, ensure_ascii=False)
        except ValueError:
            return text
    if kind.startswith("text/") or kind in ("application/xml", "application/javascript", "application/x-yaml", ""):
        return text
    return f"[{kind} content, {len(body):,} bytes: not shown as text]"
