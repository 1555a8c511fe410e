"""`kimi trust [PATH]`, `--list`, `--revoke`: the user's answer to "may this folder widen what kimi does?"."""

from __future__ import annotations

import time
from pathlib import Path

from kimi_cli.hostsafe import trust
from kimi_cli.util.sanitize import visible  # the folder's own text: never raw escapes on the terminal


def run_trust(path: Path | None, list_only: bool, revoke: bool) -> int:
    if list_only:
        folders = trust.trusted_folders()
        if not folders:
            print("no trusted folders")
        for name, entry in sorted(folders.items()):
            when = time.strftime("%Y-%m-%d", time.localtime(entry.get("trusted_at", 0)))
            asks = "; ".join(entry.get("asks", [])) or "nothing yet"
            print(visible(f"{name}  (since {when}): {asks}", one_line=True))
        return 0
    folder = (path or Path.cwd()).resolve()
    if not folder.is_dir():
        print(visible(f"kimi trust: {folder} is not a folder", one_line=True))
        return 2
    if revoke:
        found = trust.revoke(folder)
        print(visible(f"{folder} is no longer trusted" if found else f"{folder} was not trusted", one_line=True))
        return 0
    state = trust.assess(folder)
    trust.remember(state)
    if state.asks:
        print(visible(f"trusted {folder}; its .kimi settings now apply:", one_line=True))
        from kimi_cli.frontends.questions import by_danger  # the most dangerous first, as the questions list them

        print("\n".join(f"  - {visible(ask.description, one_line=True)}" for ask in by_danger(state.asks)))
    else:
        shown = visible(str(folder), one_line=True)
        print(f"trusted {shown} (its .kimi asks for nothing that widens what kimi does yet; a change asks again)")
    return 0
