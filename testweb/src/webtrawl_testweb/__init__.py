"""The local test web: a deterministic synthetic web of hosts ``site<i>.test`` served on 127.0.0.1.

:class:`WebModel` says what every URL answers and which URLs a correct crawl fetches; :class:`TestWeb` serves
it over HTTP and HTTPS (own CA) in a background thread and records every request in an access log that the
helpers of :mod:`webtrawl_testweb.accesslog` check for politeness, robots-first order and duplicate fetches.
"""

from webtrawl_testweb.accesslog import (
    AccessLog,
    LogEntry,
    Violation,
    duplicate_fetches,
    fetched_urls,
    load,
    politeness_violations,
    robots_first_violations,
)
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.chaos import BEHAVIOURS, ChaosWeb
from webtrawl_testweb.corpus import DEFAULT_CORPUS_DIR, Corpus
from webtrawl_testweb.expect import ExpectedCrawl
from webtrawl_testweb.harness import TestWeb, crawl_args
from webtrawl_testweb.model import Host, Link, Page, Reply, WebModel, WebOptions, build_url
from webtrawl_testweb.robots import OTHER_TOKEN, PRODUCT_TOKEN, Variant
from webtrawl_testweb.serve import add_arguments, main, run, serve_forever

__all__ = [
    "BEHAVIOURS",
    "DEFAULT_CORPUS_DIR",
    "OTHER_TOKEN",
    "PRODUCT_TOKEN",
    "AccessLog",
    "Certs",
    "ChaosWeb",
    "Corpus",
    "ExpectedCrawl",
    "Host",
    "Link",
    "LogEntry",
    "Page",
    "Reply",
    "TestWeb",
    "Variant",
    "Violation",
    "WebModel",
    "WebOptions",
    "add_arguments",
    "build_url",
    "crawl_args",
    "duplicate_fetches",
    "fetched_urls",
    "load",
    "main",
    "politeness_violations",
    "robots_first_violations",
    "run",
    "serve_forever",
]
