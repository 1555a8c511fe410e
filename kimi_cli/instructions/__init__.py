"""The model's instructions: the system prompt (prose in package data) and the environment block."""
