"""The model side: one OpenAI-compatible streaming client with retries."""
