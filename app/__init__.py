"""Mnemo: a local-first memory that finds things again by meaning."""

__version__ = "0.1.0"
