"""Sub-commands that start without Typer: `kimi pack` and `kimi undo`."""
