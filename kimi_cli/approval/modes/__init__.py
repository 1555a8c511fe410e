"""Session modes: ask, auto (approval policies) and plan (read-only study that ends with a plan)."""
