"""``trawl bench``: the crawler against the local test web, measured per process (see ``benchmarks/``).

The runner (:mod:`webtrawl_bench.crawl_run`) is imported on use: ``trawl --help`` should not load Redis clients.
"""

from webtrawl_bench.cli import add_arguments, run
from webtrawl_bench.spec import MODEL_URLS, CrawlSpec, follow_args
from webtrawl_bench.testweb_proc import TestWebProcess, WebSpec

__all__ = ["MODEL_URLS", "CrawlSpec", "TestWebProcess", "WebSpec", "add_arguments", "follow_args", "run"]
