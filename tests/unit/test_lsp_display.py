"""What an edit's diagnostics look like where the user sees them: the terminal's tool result and ACP's tool-call
update (the lines kimi_cli.extensions.lsp.manager puts in the result's display under "diagnostics")."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType

from kimi_cli.agent.events import ToolOutput
from kimi_cli.frontends.acp.updates import to_updates
from kimi_cli.frontends.terminal.panels import render_result
from kimi_cli.tools.write_file import diff_display

NOTES = [
    "[diagnostics] 1 new, 1 fixed after this edit",
    "error app.py:5:19 [reportArgumentType] Argument of type \"Literal['3']\" cannot be assigned",
    'fixed: warning app.py:2:1 [reportUnusedImport] Import "os" is not accessed',
]


def render(renderable: RenderableType, width: int = 100) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False, markup=False,
                      emoji=False, force_terminal=False)  # fmt: skip
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())  # type: ignore[attr-defined]


def edit(notes: list[str]) -> ToolOutput:
    display = {**diff_display("app.py", "import os\n", "x = 1\n"), "diagnostics": notes}
    output = "wrote app.py\n\n" + "\n".join(notes)  # as after_call appends them
    return ToolOutput("c1", "WriteFile", output, False, 1.0, display)


def test_the_terminal_shows_the_diff_then_each_diagnostic_once() -> None:
    shown = render(render_result(edit(NOTES), 100))
    assert "app.py" in shown and "+x = 1" in shown  # the diff panel as before
    for note in NOTES:
        assert shown.count(note[:60]) == 1, shown
    assert shown.index("+x = 1") < shown.index("[diagnostics]")


def test_a_result_without_diagnostics_renders_as_before() -> None:
    bare = edit([])
    bare.display = {k: v for k, v in (bare.display or {}).items() if k != "diagnostics"}
    assert "[diagnostics]" not in render(render_result(bare, 100))


def test_a_servers_message_cannot_drive_the_terminal() -> None:
    hostile = [NOTES[0], "error app.py:1:1 \x1b]52;c;ZXZpbA==\x07 \x1b[2J owned"]
    shown = render(render_result(edit(hostile), 100))
    assert "\x1b" not in shown and "\x07" not in shown and "owned" in shown


def test_acp_sends_the_diff_and_the_diagnostics_as_text() -> None:
    (update,) = to_updates(edit(NOTES), "/ws")
    content = update.content
    assert content[0].type == "diff" and content[0].new_text == "x = 1\n"
    assert content[1].type == "content" and content[1].content.text == "\n".join(NOTES)
    (plain,) = to_updates(edit([]), "/ws")
    assert len(plain.content) == 1
