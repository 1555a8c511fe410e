"""Renderers of agent events: headless (text/json/stream-json) and, later, interactive."""
