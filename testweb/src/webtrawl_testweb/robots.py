"""The robots.txt variants of the test web, kept as data so the served file and the model's rules agree.

:func:`robots_text` renders the groups a host serves and :func:`allows` answers from the same groups, so a
test that compares a crawl with the model cannot be fooled by the two drifting apart. Only plain path prefixes
are used (no ``*`` or ``$`` patterns) so the matching here stays obviously right.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

PRODUCT_TOKEN = "webtrawl"
"""The product token of the group that :attr:`Variant.TOKEN_GROUP` hosts address specially."""

OTHER_TOKEN = "otherbot"
"""A token that :attr:`Variant.TOKEN_GROUP` hosts shut out completely (tests group selection)."""


class Variant(enum.IntEnum):
    """Per-host behaviour, chosen by ``host index % 10`` (table in :mod:`webtrawl_testweb.model`)."""

    ALLOW_ALL = 0
    PRIVATE = 1
    CRAWL_DELAY = 2
    ROBOTS_404 = 3
    ROBOTS_503 = 4
    TOKEN_GROUP = 5
    ROBOTS_REDIRECT = 6
    X_ROBOTS_TAG = 7
    META_NOFOLLOW = 8
    CROSS_REDIRECT = 9


@dataclass(frozen=True, slots=True)
class Group:
    """One robots.txt group: the user agents it names, its Disallow prefixes and its Crawl-delay."""

    agents: tuple[str, ...]
    disallow: tuple[str, ...] = ()
    crawl_delay: float | None = None


_ALLOW_ALL = (Group(("*",)),)
_NO_PAGE_1 = (Group(("*",), ("/p/1.html",)),)


def groups(variant: Variant, crawl_delay: float) -> tuple[Group, ...]:
    """The groups the host's effective robots.txt holds (for ROBOTS_REDIRECT: the redirect target's)."""
    if variant is Variant.PRIVATE:
        return (Group(("*",), ("/private/",)),)
    if variant is Variant.CRAWL_DELAY:
        return (Group(("*",), (), crawl_delay),)
    if variant is Variant.TOKEN_GROUP:
        return (
            Group((OTHER_TOKEN,), ("/",)),
            Group(("*",), ("/p/1.html",)),
            Group((PRODUCT_TOKEN,), ("/p/2.html",)),
        )
    if variant is Variant.ROBOTS_REDIRECT:
        return _NO_PAGE_1
    if variant in (Variant.ROBOTS_404, Variant.ROBOTS_503):
        return ()
    return _ALLOW_ALL


def robots_text(name: str, variant: Variant, crawl_delay: float) -> bytes:
    lines = [f"# robots.txt of {name} (test web variant {variant.name})"]
    for group in groups(variant, crawl_delay):
        lines.append("")
        lines.extend(f"User-agent: {agent}" for agent in group.agents)
        lines.extend(f"Disallow: {prefix}".rstrip() for prefix in group.disallow or ("",))
        if group.crawl_delay is not None:
            lines.append(f"Crawl-delay: {group.crawl_delay:g}")
    return ("\n".join(lines) + "\n").encode()


def select_group(variant: Variant, crawl_delay: float, product_token: str) -> Group | None:
    """The group a crawler with ``product_token`` obeys (RFC 9309: case-insensitive match, else ``*``)."""
    token = product_token.lower()
    star = None
    for group in groups(variant, crawl_delay):
        if token in (agent.lower() for agent in group.agents):
            return group
        if "*" in group.agents:
            star = group
    return star


def allows(variant: Variant, crawl_delay: float, product_token: str, target: str) -> bool:
    """Whether the rules let ``product_token`` fetch ``target`` (path + query). 503 hosts allow nothing."""
    if variant is Variant.ROBOTS_503:
        return False
    group = select_group(variant, crawl_delay, product_token)
    return group is None or not any(target.startswith(prefix) for prefix in group.disallow)
