"""The failure a tool reports to the model (ToolError): what every tool, the workspace boundary and the
services they use raise for the model to read, below the tool base so that each of them can import it.
"""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read and act on; it becomes the tool result, never a crash."""
