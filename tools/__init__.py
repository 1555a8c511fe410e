"""The tools the agent calls, and the sandboxes the Shell tool runs in."""
