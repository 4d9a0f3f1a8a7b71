"""Slow reference implementations that the tests compare the package with (not shipped)."""
