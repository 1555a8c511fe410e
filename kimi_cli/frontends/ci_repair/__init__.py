"""Continuous-integration repair: run the tests, let the agent fix them, report."""
