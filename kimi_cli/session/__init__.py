"""Sessions: an append-only JSONL log per run, resumable after a crash."""
