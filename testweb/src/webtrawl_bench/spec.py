"""What a benchmark run crawls and how: kept apart from the runner so ``trawl --help`` stays cheap to import."""

from __future__ import annotations

from dataclasses import dataclass

from webtrawl.config import FrontierOptions

# The URL forms the test web's model links to (pages, redirects, nofollow targets, private pages, /away). The
# corpus pages' own relative links (~32 per page) all answer 404 on the test web; following them would make
# 404s most of the fetches. See benchmarks/RESULTS.md ("corpus fraction and links followed").
MODEL_URLS = r"^https?://site\d+\.test(?::\d+)?/(?:p/\d+\.html|r/\d+|n/\d+\.html|private/\d+\.html|away)?$"
STATUS_COUNTERS = (
    "pages",
    "redirects",
    "err:http-4xx",
    "err:http-5xx",
    "drop:robots",
    "robots-fetched",
    "session-leases",
    "warc",
    "stored",
)


@dataclass(frozen=True, slots=True)
class CrawlSpec:
    """How the crawl is run and measured."""

    warmup: float = 60.0  # the first visit of every host (robots.txt + a page) is over by then
    window: float = 60.0
    delay: float = 2.0
    fetchers: int = 0
    parsers: int = 0
    concurrency: int = 128
    warc: bool = True
    follow_all: bool = False
    preload: int = 0
    expected_urls: int = FrontierOptions().expected_urls  # the crawl's own: the seen filter a user's crawl has
    extra: tuple[str, ...] = ()  # more ``trawl crawl`` flags


def follow_args(follow_all: bool) -> list[str]:
    """The ``trawl crawl`` flags that restrict the links followed to the test web's model (unless all)."""
    return [] if follow_all else ["--include", MODEL_URLS]
