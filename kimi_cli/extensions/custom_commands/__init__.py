"""Custom slash commands: markdown files whose body is a prompt (loader.py finds them, expand.py fills them in)."""
