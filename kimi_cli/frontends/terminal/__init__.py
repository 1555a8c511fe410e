"""The interactive terminal session: prompt_toolkit input, rich output, approvals and slash commands."""
