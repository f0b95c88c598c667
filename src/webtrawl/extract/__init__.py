"""Extraction: user rules, Python callbacks and main text, run in the parser processes on the parsed page."""

from webtrawl.extract.base import Extractor, ExtractResult, Follow, RecrawlHints, RequestHints
from webtrawl.extract.crawlspider import CrawlSpider, Link, LinkExtractor, Rule
from webtrawl.extract.document import Document
from webtrawl.extract.page import Page
from webtrawl.extract.pipeline import EXTRACT_ERROR, Extraction, absolute_spec, build_extraction, load_extractor
from webtrawl.extract.spider import Spider, SpiderExtractor, load_spider

__all__ = [
    "EXTRACT_ERROR",
    "CrawlSpider",
    "Document",
    "ExtractResult",
    "Extraction",
    "Extractor",
    "Follow",
    "Link",
    "LinkExtractor",
    "Page",
    "RecrawlHints",
    "RequestHints",
    "Rule",
    "Spider",
    "SpiderExtractor",
    "absolute_spec",
    "build_extraction",
    "load_extractor",
    "load_spider",
]
