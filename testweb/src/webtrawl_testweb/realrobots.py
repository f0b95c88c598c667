"""robots.txt files of the realistic web, shaped like the ones real sites serve.

* ordinary: a group for ``*`` with a dozen or two Disallow/Allow lines (``*`` and ``$`` patterns included),
  groups for other crawlers, Sitemap lines;
* big (like the largest real sites): ~16,000 rules, ~600 KB, all in the ``*`` group a crawler has to obey;
* crawl-delay: an ordinary file plus a group for our product token with ``Crawl-delay``.

Bodies are deterministic: :func:`big_robots` builds a few variants once (cached) and each host gets one of them
behind its own first line, so no two hosts serve the same bytes.
"""

from __future__ import annotations

import functools
import random

from webtrawl_testweb.robots import PRODUCT_TOKEN

BIG_RULES = 16_000
BIG_VARIANTS = 8
_SECTIONS = (
    "search", "account", "cart", "checkout", "login", "admin", "api", "print", "share", "tag", "author",
    "archive", "comments", "feed", "amp", "embed", "video", "gallery", "shop", "product", "category", "user",
)  # fmt: skip
_LOCALES = ("en-us", "en-gb", "de-de", "fr-fr", "es-es", "it-it", "ja-jp", "pt-br", "zh-cn", "nl-nl")
_OTHER_BOTS = ("GPTBot", "CCBot", "Google-Extended", "anthropic-ai", "Bytespider", "AhrefsBot", "SemrushBot")


def _rule(rng: random.Random) -> str:
    section = rng.choice(_SECTIONS)
    shape = rng.random()
    if shape < 0.45:
        return f"Disallow: /{rng.choice(_LOCALES)}/{section}/{rng.randrange(10**6)}-{rng.choice(_SECTIONS)}-p/"
    if shape < 0.65:
        return f"Disallow: /*/{section}-{rng.randrange(10**5)}/*/index.html$"
    if shape < 0.8:
        return f"Disallow: /*?{section}={rng.randrange(10**4)}&*"
    if shape < 0.92:
        return f"Allow: /{rng.choice(_LOCALES)}/{section}/{rng.randrange(10**6)}/public/"
    return f"Disallow: /{rng.choice(_SECTIONS)}/{section}/{rng.randrange(10**7)}$"


def ordinary_robots(name: str, key: int) -> bytes:
    """A small robots.txt of a common shape (``key`` picks the details)."""
    rng = random.Random(key)
    lines = [f"# robots.txt for {name}", ""]
    for bot in rng.sample(_OTHER_BOTS, rng.randint(0, 3)):
        lines += [f"User-agent: {bot}", "Disallow: /", ""]
    lines.append("User-agent: *")
    lines += [_rule(rng) for _ in range(rng.randint(4, 30))]
    lines += ["Disallow: /*?s=", "Disallow: /wp-admin/", "Allow: /wp-admin/admin-ajax.php", ""]
    lines.append(f"Sitemap: https://{name}/sitemap.xml")
    return ("\n".join(lines) + "\n").encode()


def crawl_delay_robots(name: str, key: int, delay: float) -> bytes:
    """An ordinary robots.txt with a group for our product token that asks for ``Crawl-delay: delay``."""
    own = f"User-agent: {PRODUCT_TOKEN}\nCrawl-delay: {delay:g}\nDisallow: /search\nDisallow: /*?replytocom=\n\n"
    return own.encode() + ordinary_robots(name, key)


@functools.cache
def _big_body(variant: int) -> bytes:
    rng = random.Random(f"big-robots:{variant}")
    lines = ["User-agent: *"]
    lines += [_rule(rng) for _ in range(BIG_RULES)]
    lines += ["", "User-agent: GPTBot", "Disallow: /", "", "Sitemap: https://example.invalid/sitemap-index.xml"]
    return ("\n".join(lines) + "\n").encode()


def big_robots(name: str, key: int) -> tuple[bytes, bytes]:
    """A ~600 KB robots.txt of :data:`BIG_RULES` rules, as (a first line naming the host, the cached rest)."""
    return f"# robots.txt for {name} ({key})\n".encode(), _big_body(key % BIG_VARIANTS)


def warm_up() -> None:
    for variant in range(BIG_VARIANTS):
        _big_body(variant)
