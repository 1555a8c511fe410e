"""kimi_cli: an agentic coding assistant for Kimi K3.1 Pro and any OpenAI-compatible endpoint."""

__version__ = "0.1.0"
