"""Hooks: the user's own commands, run on the host at points of a session (Claude Code's protocol).

config.py reads them, runner.py spawns them, verdict.py reads what they answered, session.py builds each
event's JSON and is what the agent loop calls (through kimi_cli.agent.gate), pins.py keeps workspace
scripts named by a hook from changing under it.
"""
