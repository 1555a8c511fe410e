"""Tool results as bounded panels: a head and a tail with "N lines hidden", long lines clipped to the width
with a marker, big diffs as a summary plus their first hunks. The full output stays one key away (Ctrl-O,
`/last`), so nothing is lost by folding.

Pure functions of (event, width) -> rich renderable, so they can be snapshot-tested at a fixed width.
Every untrusted string goes through the one sanitiser (visible_text); nothing is parsed as markup.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from kimi_cli.agent.events import ToolOutput
from kimi_cli.util.sanitize import visible_text

HEAD = 4  # lines kept from the start of a long output
TAIL = 5  # and from its end
DIFF_LINES = 20  # diff lines shown before the rest is summarised
RESULT_LINES = 3  # lines of a plain tool result (ReadFile-like tools say what they did instead)
EXPAND_HINT = "ctrl-o shows all"
TODO_MARKS = {"pending": "☐", "in_progress": "◐", "done": "☑"}
PANEL_CHROME = 4  # borders and padding of a panel


def clip(line: str, width: int, style: str = "") -> Text:
    """One line, sanitised, cut to `width` cells with a marker that says how much was cut."""
    text = visible_text(line, style, drop_colors=True, one_line=True)
    width = max(width, 16)
    if text.cell_len <= width:
        return text
    keep = max(width - len(f" …+{text.cell_len:,} chars"), 1)  # the marker is never longer than this
    hidden = text.cell_len - keep
    text.truncate(keep)
    text.append(f" …+{hidden:,} chars", style="dim")
    return text


def fold(lines: list[str], width: int, style: str = "", head: int = HEAD, tail: int = TAIL) -> Text:
    """The lines, or their head and tail around one "N lines hidden" line."""
    out = Text()
    if len(lines) <= head + tail + 1:
        shown: list[str | int] = list(lines)
    else:
        shown = [*lines[:head], len(lines) - head - tail, *lines[-tail:]]
    for index, item in enumerate(shown):
        if index:
            out.append("\n")
        if isinstance(item, int):
            out.append(f"… {item:,} lines hidden ({EXPAND_HINT}) …", style="dim italic")
        else:
            out.append_text(clip(item, width, style))
    return out


@dataclass
class DiffStats:
    files: list[str]
    added: int
    removed: int
    hunks: int
    new_file: bool


def diff_stats(diff: str) -> DiffStats:
    files: list[str] = []
    added = removed = hunks = 0
    new_file = False
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            files.append(name[2:] if name.startswith(("a/", "b/")) else name)
        elif line.startswith("--- "):
            new_file = new_file or line[4:].strip() == "/dev/null"
        elif line.startswith("@@"):
            hunks += 1
            new_file = new_file or (hunks == 1 and line.startswith("@@ -0,0 "))
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return DiffStats(files, added, removed, hunks, new_file)


def diff_body(diff: str, width: int, limit: int = DIFF_LINES) -> Text:
    """The diff's lines coloured by kind, the first `limit` of them, then what was left out."""
    lines = [line for line in diff.splitlines() if not line.startswith(("--- ", "+++ "))]
    out = Text()
    for index, line in enumerate(lines[:limit]):
        if index:
            out.append("\n")
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        out.append_text(clip(line, width, "cyan" if line.startswith("@@") else style))
    rest = lines[limit:]
    if rest:
        more_hunks = sum(1 for line in rest if line.startswith("@@"))
        hunks = f" in {more_hunks} more hunk{'s' if more_hunks != 1 else ''}" if more_hunks else ""
        out.append(f"\n… {len(rest):,} more lines{hunks} ({EXPAND_HINT}) …", style="dim italic")
    return out


def diff_panel(display: dict[str, Any], width: int) -> RenderableType:
    diff = str(display.get("diff", ""))
    stats = diff_stats(diff)
    path = str(display.get("path", "")) or (stats.files[0] if stats.files else "")
    what = "new file" if stats.new_file else "edited"
    title = visible_text(f"{what} {path}", one_line=True)
    counts = Text.assemble((f"+{stats.added}", "green"), " ", (f"-{stats.removed}", "red"))
    if stats.hunks > 1:
        counts.append(f" · {stats.hunks} hunks")
    inner = width - PANEL_CHROME
    return Panel(diff_body(diff, inner), title=title, subtitle=counts, title_align="left", border_style="green",
                 expand=False)  # fmt: skip


def shell_panel(event: ToolOutput, width: int) -> RenderableType:
    display = event.display or {}
    inner = width - PANEL_CHROME
    title = clip(f"$ {display.get('command', '')}", inner - 2)
    if display.get("task"):
        note = visible_text(f"started {display['task']} in the background (/tasks {display['task']} shows it)", "dim")
        return Panel(note, title=title, title_align="left", border_style="blue", expand=False)
    lines = event.output.splitlines()[1:]  # the first line is the status the model reads
    while lines and not lines[-1].strip():
        lines.pop()
    status = "timed out" if display.get("timed_out") else f"exit {display.get('exit_code')}"
    if len(lines) > 1:
        status += f" · {len(lines):,} lines"
    body = fold(lines, inner, "dim") if lines and lines != ["(no output)"] else Text("(no output)", style="dim")
    return Panel(body, title=title, subtitle=Text(status), title_align="left",
                 border_style="red" if event.is_error else "green", expand=False)  # fmt: skip


def todo_panel(display: dict[str, Any], width: int) -> RenderableType:
    todos = [t for t in display.get("todos", []) if isinstance(t, dict)]
    body = Text()
    for index, todo in enumerate(todos):
        if index:
            body.append("\n")
        mark = TODO_MARKS.get(str(todo.get("status")), "☐")
        body.append_text(clip(f"{mark} {todo.get('title', '')}", width - PANEL_CHROME,
                              "dim" if todo.get("status") == "done" else ""))  # fmt: skip
    done = sum(1 for t in todos if t.get("status") == "done")
    title = Text(f"plan · {done}/{len(todos)} done")
    return Panel(body if todos else Text("(empty)"), title=title, title_align="left", border_style="blue",
                 expand=False)  # fmt: skip


def summary_line(text: str, width: int, style: str = "dim") -> Text:
    return Text("  ⎿ ", style=style).append_text(clip(text, width - 4, style))


def result_summary(event: ToolOutput) -> str | None:
    """What a reading tool did, from its display data: lines read, matches found, files listed."""
    d = event.display or {}
    kind = d.get("kind")
    if kind == "read":
        total = f" of {d['total']:,}" if isinstance(d.get("total"), int) else ""
        if not d.get("lines"):
            return f"read nothing ({d.get('note') or 'empty'})"
        return f"read {d['lines']:,} lines ({d.get('first', 1)}-{d.get('last', d['lines'])}{total})"
    if kind == "grep":
        if not d.get("matches"):
            return "no matches"
        more = " (stopped at the limit)" if d.get("truncated") else ""
        files = d.get("files", 0)
        return f"{d['matches']:,} matching lines in {files:,} file{'s' if files != 1 else ''}{more}"
    if kind == "glob":
        more = " (first 1,000 shown)" if d.get("truncated") else ""
        return f"{d.get('count', 0):,} files{more}" if d.get("count") else "no files"
    if kind == "fetch":
        return f"HTTP {d.get('status')} · {d.get('type')} · {int(d.get('size', 0)):,} bytes"
    if kind == "subagent":
        return f"{d.get('agent', 'subagent')} agent done · {int(d.get('tokens', 0)):,} tokens"
    return None


def render_result(event: ToolOutput, width: int) -> RenderableType:
    """The panel or line printed for one tool result, `width` columns wide at most."""
    display = event.display or {}
    notes = display.get("diagnostics")  # what the language servers said after an edit (kimi_cli.extensions.lsp)
    if isinstance(notes, list) and notes and all(isinstance(n, str) for n in notes):
        cut = event.output.rfind(notes[0])
        bare = replace(event, output=event.output[:cut].rstrip() if cut >= 0 else event.output,
                       display={k: v for k, v in display.items() if k != "diagnostics"})  # fmt: skip
        return Group(render_result(bare, width), diagnostics_lines(notes, width))
    kind = display.get("kind")
    if kind == "diff" and display.get("diff") and not event.is_error:
        return diff_panel(display, width)
    if kind == "todos" and not event.is_error:
        return todo_panel(display, width)
    if kind == "shell":
        return shell_panel(event, width)
    lines = event.output.splitlines() or ["(no output)"]
    if event.is_error:
        if len(lines) == 1:
            return summary_line(lines[0], width, "red")
        return Group(Text("  ⎿ error", style="red"), _indent(fold(lines, width - 4, "red", head=3, tail=2)))
    summary = result_summary(event)
    if summary is not None:
        return summary_line(summary, width)
    if len(lines) <= RESULT_LINES:
        rest = [_indent(clip(line, width - 4, "dim")) for line in lines[1:]]
        return Group(summary_line(lines[0], width), *rest)
    first = summary_line(lines[0], width)
    more = Text(f"    … {len(lines) - 1:,} more lines ({EXPAND_HINT})", style="dim italic")
    return Group(first, more)


def diagnostics_lines(notes: list[str], width: int) -> Text:
    """An edit's new and fixed diagnostics under its panel: errors red, warnings yellow, fixes green."""
    out = Text()
    for index, note in enumerate(notes):
        style = "dim"
        for start, colour in (("fixed:", "green"), ("error", "red"), ("warning", "yellow")):
            if index and note.startswith(start):
                style = colour
                break
        out.append("\n" if index else "")
        out.append_text(clip(("  ⎿ " if index == 0 else "    ") + note, width, style))
    return out


def _indent(text: Text) -> Text:
    out = Text()
    for index, line in enumerate(text.split("\n")):
        if index:
            out.append("\n")
        out.append("    ")
        out.append_text(line)
    return out


def full_output(event: ToolOutput) -> str:
    """Everything the call returned, for the pager (`/last`, Ctrl-O): the diff for an edit, else the output."""
    display = event.display or {}
    if display.get("kind") == "diff" and display.get("diff"):
        return str(display["diff"])
    return event.output
