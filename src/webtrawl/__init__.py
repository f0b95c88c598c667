"""webtrawl: a fast, polite, crash-safe web crawler whose frontier lives in Redis.

The public Python API (see the README's "Using webtrawl from Python")::

    from webtrawl import Crawler
    result = Crawler(MySpider, out="crawl1", max_pages=100).run()  # or "rules.toml", or a function

Names load on first use (PEP 562): ``import webtrawl`` stays cheap for the processes that import one small module
of it, and a type checker sees them all through the ``TYPE_CHECKING`` imports.
"""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from webtrawl.api import Crawler, CrawlResult
    from webtrawl.errors import CloseSpider, ConfigError, InputError, StateError, WebtrawlError
    from webtrawl.extract import CrawlSpider, Follow, LinkExtractor, Page, Rule, Spider

_WHERE = {
    "Crawler": "webtrawl.api",
    "CrawlResult": "webtrawl.api",
    "CrawlSpider": "webtrawl.extract",
    "Follow": "webtrawl.extract",
    "LinkExtractor": "webtrawl.extract",
    "Rule": "webtrawl.extract",
    "Page": "webtrawl.extract",
    "Spider": "webtrawl.extract",
    "CloseSpider": "webtrawl.errors",
    "ConfigError": "webtrawl.errors",
    "InputError": "webtrawl.errors",
    "StateError": "webtrawl.errors",
    "WebtrawlError": "webtrawl.errors",
}
__getattr__ = lazy_exports(__name__, _WHERE)

__all__ = [
    "CloseSpider",
    "ConfigError",
    "CrawlResult",
    "CrawlSpider",
    "Crawler",
    "Follow",
    "InputError",
    "LinkExtractor",
    "Page",
    "Rule",
    "Spider",
    "StateError",
    "WebtrawlError",
    "__version__",
]
