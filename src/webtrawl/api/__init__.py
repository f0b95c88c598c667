"""The Python API: start a crawl from code (:class:`Crawler`) and read what it stored (:class:`CrawlResult`)."""

from webtrawl.api.crawler import Crawler
from webtrawl.api.result import CrawlResult

__all__ = ["CrawlResult", "Crawler"]
