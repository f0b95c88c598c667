"""A spider's route (``Lease.route``/``NewUrl.route``: the callback name and the JSON data a link was followed with)
as it is framed after other fields: ``^<n>:<route>``, ``n`` its length in UTF-8 bytes (the unit of Lua's string
functions). The frontier frames it in a queue entry (:mod:`webtrawl.frontier.keys`, which explains why it lives
there) and the recrawl state after the depth (:mod:`webtrawl.formats.recrawl`).
"""

from __future__ import annotations

ROUTE_MARK = "^"  # starts a route; never the first character of what a route may precede (a rest, a depth's end)
# The route of a URL reached as a sitemap (robots.txt Sitemap:, --sitemap, a sitemap index's): what lets a text
# sitemap, which has no markup to tell it by, be read as one. No spider method is named so (not an identifier), and
# a spider's page with it goes to ``parse`` (webtrawl.extract.routing). Only sitemap URLs carry it: a few bytes each.
SITEMAP_ROUTE = "@sitemap"
# A sitemap an index lists carries its nesting level after the mark (``@sitemap2``: an index's in an index's):
# indexes may nest (sitemaps.org says nothing; Google reads none), but not without end, as a generated site's would.
MAX_SITEMAP_NESTING = 5


def sitemap_route(level: int) -> str:
    """The route of a sitemap at nesting ``level`` (0: robots.txt's, --sitemap's; 1: an index's...)."""
    return f"{SITEMAP_ROUTE}{level}" if level else SITEMAP_ROUTE


def sitemap_level(route: str) -> int | None:
    """The nesting level of a sitemap's route; None for a route that is not a sitemap's."""
    if not route.startswith(SITEMAP_ROUTE):
        return None
    level = route[len(SITEMAP_ROUTE) :]
    return int(level) if level.isdigit() else 0 if not level else None


def frame_route(route: str) -> str:
    """``^<n>:<route>``: a route as it sits in an entry, after the metadata (n: its length in UTF-8 bytes, the unit
    of Lua's string functions)."""
    return f"{ROUTE_MARK}{len(route.encode())}:{route}"


def split_route(text: str) -> tuple[str, str]:
    """(route, what follows it) of text that may start with a framed route; ("", text) if it does not."""
    if not text.startswith(ROUTE_MARK):
        return "", text
    colon = text.find(":", 1)
    size = text[1:colon]
    if colon < 0 or not size.isdigit():  # not written by us: keep it all as the URL
        return "", text
    body = text[colon + 1 :]
    n = int(size)
    if body.isascii():
        return body[:n], body[n:]
    raw = body.encode()
    return raw[:n].decode(errors="replace"), raw[n:].decode(errors="replace")
