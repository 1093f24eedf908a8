"""Flawed agents."""
