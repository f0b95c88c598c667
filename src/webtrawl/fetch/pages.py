"""A fetched answer as the rest of the crawl sees it: the Page sent to a parser, the counters its release adds,
whether its connection stays open, and the host's gap after it."""

from __future__ import annotations

from webtrawl.config import Politeness
from webtrawl.fetch.response import Response
from webtrawl.messages import Lease, Page
from webtrawl.politeness import RobotsRules


def release_counters(page: Page) -> dict[str, int] | None:
    """The frontier counters a fetched page adds when its host is released."""
    if not page.status:
        return None
    counters = {"fetched": 1}
    if page.dom is not None:
        counters["rendered"] = 1
        blocked = sum(page.render_blocked.values())
        if blocked:
            counters["render-blocked"] = blocked
    return counters


def reusable(page: Page) -> bool:
    """Whether the connection that brought ``page`` stays open for the next request (HTTP/1.1 keep-alive)."""
    if page.error and page.error != "robots":
        return False
    return not any(n.lower() == "connection" and "close" in v.lower() for n, v in page.headers)


def host_gap_ms(pol: Politeness, rules: RobotsRules) -> int:
    delay = pol.delay
    if rules.crawl_delay is not None:
        delay = max(delay, min(rules.crawl_delay, pol.max_crawl_delay))
    return int(delay * 1000)


def page_from(lease: Lease, resp: Response) -> Page:
    return Page(
        lease=lease,
        **resp.page_fields(),
        error="too-large" if resp.truncated else "",
        error_detail="body cut at the size cap" if resp.truncated else "",
    )
