"""webtrawl: a fast, polite, crash-safe web crawler whose frontier lives in Redis."""

__version__ = "0.1.0"
