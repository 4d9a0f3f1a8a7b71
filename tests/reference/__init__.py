"""Slow reference searches the tests compare the package's fast paths with (never imported
by the package): element-by-element exact rationals and one cone program per key."""
