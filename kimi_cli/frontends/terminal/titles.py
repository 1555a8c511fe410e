"""One human line per tool call: `Read src/app.py (lines 120-179)`, `Plan: 4 items, 1 done`, `$ pytest -q`.

Never a Python repr: arguments are read as JSON and shown by what they mean; an unknown tool (an MCP
tool) gets its arguments as compact JSON. The result is plain text: callers pass it through the
sanitiser (kimi_cli.util.sanitize) before it reaches the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Args = dict[str, Any]
LIMIT = 160


def _s(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _shell(a: Args) -> str:
    return f"$ {_s(a.get('command', ''))}" + ("  (in the background)" if a.get("background") else "")


def _read(a: Args) -> str:
    path = _s(a.get("path", ""))
    start, count = a.get("line_offset"), a.get("n_lines")
    if (isinstance(start, int) and start > 1) or isinstance(count, int):
        first = start if isinstance(start, int) else 1
        last = f"{first + count - 1}" if isinstance(count, int) else "…"
        return f"Read {path} (lines {first}-{last})"
    return f"Read {path}"


def _write(a: Args) -> str:
    verb = "Append to" if a.get("mode") == "append" else "Write"
    content = a.get("content")
    lines = f" ({content.count(chr(10)) + (0 if content.endswith(chr(10)) else 1)} lines)" if content else ""
    return f"{verb} {_s(a.get('path', ''))}{lines}"


def _edit(a: Args) -> str:
    edits = a.get("edits")
    count = f" ({len(edits)} edits)" if isinstance(edits, list) and len(edits) > 1 else ""
    return f"Edit {_s(a.get('path', ''))}{count}"


def _grep(a: Args) -> str:
    where = f" in {_s(a['path'])}" if a.get("path") else ""
    only = f" ({_s(a['glob'])})" if a.get("glob") else ""
    case = " ignoring case" if a.get("ignore_case") else ""
    return f"Search /{_s(a.get('pattern', ''))}/{where}{only}{case}"


def _glob(a: Args) -> str:
    where = f" in {_s(a['directory'])}" if a.get("directory") else ""
    return f"Find {_s(a.get('pattern', ''))}{where}"


def _todos(a: Args) -> str:
    raw = a.get("todos")
    todos: list[Any] = raw if isinstance(raw, list) else []
    done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "done")
    doing = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "in_progress")
    parts = [f"{len(todos)} item{'s' if len(todos) != 1 else ''}"]
    if done:
        parts.append(f"{done} done")
    if doing:
        parts.append(f"{doing} in progress")
    return "Plan: " + ", ".join(parts)


def _git(a: Args) -> str:
    words = [_s(a.get("command", ""))]
    if a.get("message"):
        words.append(f"-m {json.dumps(_s(a['message']), ensure_ascii=False)}")
    for key in ("rev", "name"):
        if a.get(key):
            words.append(_s(a[key]))
    words += [f"--{k}" for k in ("staged", "all", "create", "delete") if a.get(k) is True]
    paths = a.get("paths")
    if isinstance(paths, list):
        words += [_s(p) for p in paths]
    return "git " + " ".join(words)


def _agent(a: Args) -> str:
    task = " ".join(_s(a.get("task", "")).split())
    return f"Agent ({_s(a.get('kind') or 'explore')}): {task}"


TITLES: dict[str, Callable[[Args], str]] = {
    "Shell": _shell,
    "ReadFile": _read,
    "WriteFile": _write,
    "StrReplaceFile": _edit,
    "Grep": _grep,
    "Glob": _glob,
    "SetTodoList": _todos,
    "Git": _git,
    "Agent": _agent,
    "ReadMediaFile": lambda a: f"View {_s(a.get('path', ''))}",
    "TaskOutput": lambda a: f"Output of {_s(a.get('id', ''))}",
    "TaskStop": lambda a: f"Stop {_s(a.get('id', ''))}",
    "FetchURL": lambda a: f"Fetch {_s(a.get('url', ''))}",
    "SearchWeb": lambda a: f"Search the web: {_s(a.get('query', ''))}",
}


def tool_title(name: str, arguments: str) -> str:
    """The header line for a call, at most LIMIT characters (plain text, not yet sanitised)."""
    try:
        args = json.loads(arguments or "{}")
    except (ValueError, RecursionError):  # RecursionError: a hostile model's thousands of nested arrays
        return _clip(f"{name} {arguments}")
    if not isinstance(args, dict):
        return _clip(f"{name} {_s(args)}")
    maker = TITLES.get(name)
    if maker is not None:
        try:
            return _clip(maker(args))
        except (TypeError, ValueError, AttributeError, RecursionError):
            pass
    if name.startswith("mcp__"):
        _, server, tool = ([*name.split("__", 2), "", ""])[:3]
        name = f"{server} · {tool}"
    try:
        compact = json.dumps(args, ensure_ascii=False, separators=(", ", ": ")) if args else ""
    except RecursionError:
        compact = _clip(arguments)
    return _clip(f"{name} {compact}".rstrip())


def _clip(text: str) -> str:
    """At most LIMIT characters of `text` on one line, blank runs counted (`$ npm test⎵×260; echo PWNED`) and
    what is left out counted too, never cut silently (kimi_cli.frontends.questions)."""
    from kimi_cli.frontends.questions import show

    return show(text, one_line=True, limit=LIMIT).plain
