"""Fuzz harnesses for the parsers of untrusted input (see :mod:`fuzz.targets` and README.md)."""
