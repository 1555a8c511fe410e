"""Git worktrees for parallel work: sessions, subagents and attempts, each in its own checkout (issue 43)."""
