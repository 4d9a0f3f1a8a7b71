"""Attention checks: placeholder replaced below."""
CHECKS = {}
