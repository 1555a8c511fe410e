"""The default tool set of a session."""

from __future__ import annotations

from typing import Any

from kimi_cli.tools.base import Tool
from kimi_cli.tools.glob_tool import Glob
from kimi_cli.tools.grep_tool import Grep
from kimi_cli.tools.media import ReadMediaFile
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.str_replace import StrReplaceFile
from kimi_cli.tools.todo import SetTodoList
from kimi_cli.tools.write_file import WriteFile


def default_tools(extra: list[Tool[Any]] | None = None, grep_timeout: float = 20.0) -> ToolRegistry:
    tools: list[Tool[Any]] = [
        ReadFile(),
        WriteFile(),
        StrReplaceFile(),
        Glob(),
        Grep(grep_timeout),
        ReadMediaFile(),
        SetTodoList(),
    ]
    return ToolRegistry(tools + list(extra or []))
