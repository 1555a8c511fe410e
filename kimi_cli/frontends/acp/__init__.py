"""`kimi acp`: the Agent Client Protocol on stdio, so editors (Zed and others) can drive kimi."""
