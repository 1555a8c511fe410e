"""What an approval looks like: the exact command in a panel, then one line per answer, each with its key.

Single keys (y, a, s, n), Enter meaning the default shown (no), Esc or Ctrl-C cancelling the whole turn.
The options are rich Text, so they wrap by words at any width. Pure: (command, rule, width) -> renderables,
so the layout is snapshot-tested at 60 and 120 columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kimi_cli.frontends.questions import show
from kimi_cli.util.sanitize import is_clean, visible

DEFAULT = "n"
PROMPT = "y/{keys} · Enter = no › "


@dataclass
class ApprovalView:
    renderable: RenderableType
    keys: dict[str, str] = field(default_factory=dict)  # key -> answer ("yes", "always", "save", "no")
    prompt: str = ""


def guarded_shape(rule: str) -> bool:
    """Whether a prefix rule's program has options the rules look for (kimi_cli.approval.shell.options)."""
    from kimi_cli.approval.shell.options import TABLE

    return rule.split(" ", 1)[0].rsplit("/", 1)[-1] in TABLE


def kind_of(rule: str) -> str:
    if rule.startswith("web:"):
        return "web"
    if rule.startswith("mcp__"):
        return "mcp"
    return "shell"


def approval_view(
    command: str, rule: str, config_name: str = ".kimi/config.toml", why: str = "", parts: int | None = None
) -> ApprovalView:
    """The panel and options for `command`; `rule` is what `always` remembers ("" : not offered). `why` is the
    engine's reason for asking; `parts` the plain commands of a chain, from the call's one reading (None:
    read the command here, for a caller that has no reading)."""
    kind = kind_of(rule)
    title = {"web": "fetch this page?", "mcp": "call this MCP tool?"}.get(kind, "run this command?")
    # Exactly the bytes that will run, wrapped, never cut silently: control characters written out and blank
    # runs counted (`npm test⎵×260; echo PWNED`), both in reverse video, never obeyed. Past the question's
    # limit a mark counts what is left out, and `always` is not offered for what could not be read.
    question = show(command)
    body = question.rich()
    notes: list[Text] = []
    if not question.complete:
        rule = ""
        notes.append(Text(f"({question.left_out:,} characters not shown; `always` is not offered)", style="bold red"))
    elif not is_clean(command.replace("\n", "").replace("\t", "")):
        notes.append(Text("(holds control characters, shown as \\xNN; `always` is not offered)", style="bold red"))
    elif kind == "shell" and not rule:
        if parts is None:
            from kimi_cli.approval.shell.reading import read_shell

            parts = len(read_shell(command).parts or [])
        if why:
            notes.append(Text(f"({why}: `always` is not offered for it)", style="dim"))
        elif parts > 1:
            notes.append(
                Text(
                    f"(a chain of {parts} commands: `always` is offered for one plain command only, so that "
                    "a rule never approves what is chained to it)",
                    style="dim",
                )
            )
        else:
            notes.append(Text("(not one plain command: `always` is not offered)", style="dim"))
    panel = Panel(Group(body, *notes), title=title, title_align="left", border_style="yellow", expand=False)
    keys = {"y": "yes"}
    lines = [("y", "yes, this once")]
    if rule:
        shown = visible(rule[4:] if kind == "web" else rule, one_line=True)
        what = {"web": f"fetches from {shown}", "mcp": f"calls of {shown}"}.get(kind, f"commands starting `{shown}`")
        if kind == "shell" and guarded_shape(rule):  # the safe shape: what the rule will not approve is said
            what += " whose options do not write files, run programs or reach the network (those still ask)"
        keys["a"] = "always"
        lines.append(("a", f"always: {what}, for this session"))
        if kind != "web":
            keys["s"] = "save"
            lines.append(("s", f"always, and save the rule in {config_name} for later sessions"))
    keys["n"] = "no"
    lines.append(("n", "no, and tell kimi why (Enter)"))
    lines.append(("esc", "cancel the whole turn (or Ctrl-C)"))
    prompt = PROMPT.format(keys="/".join(k for k in keys if k != "y"))
    return ApprovalView(Group(panel, _options(lines)), keys, prompt)


def _options(lines: list[tuple[str, str]]) -> Padding:
    """Key and meaning in two columns: a long meaning wraps by words under itself, never mid-word."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(justify="right", no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for key, text in lines:
        grid.add_row(Text(key), Text(text))
    return Padding(grid, (0, 0, 0, 1))
