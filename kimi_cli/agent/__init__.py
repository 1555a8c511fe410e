"""The agent loop and the typed events it emits."""
