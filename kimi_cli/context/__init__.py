"""Whole-repository context: enumerate, count, rank and pack the repo into the model's window."""
