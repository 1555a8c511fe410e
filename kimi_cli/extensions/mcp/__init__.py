"""MCP client: the user's Model Context Protocol servers become tools; one broken server never breaks a session."""
