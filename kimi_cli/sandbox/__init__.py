"""Sandboxes for the Shell tool: bubblewrap, Docker, or none. A policy is data; each backend enforces it."""
