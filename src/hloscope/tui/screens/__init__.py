"""Screens pushed over the browser: help, search prompt, progress, error message."""
