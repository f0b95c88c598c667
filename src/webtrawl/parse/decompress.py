"""Moved to :mod:`webtrawl.decompress` (fetch/ needs it too, and fetch/ must not import parse/); kept as a
re-export so existing imports keep working."""

from webtrawl.decompress import content_codings, decompress

__all__ = ["content_codings", "decompress"]
