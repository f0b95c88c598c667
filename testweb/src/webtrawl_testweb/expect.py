"""The crawl a correct crawler makes of the test web: a BFS over the model's own answers.

The BFS asks :meth:`WebModel.respond` exactly what the server would answer, so the expectation follows the
same links the crawler sees. Rules it applies, the ones a correct crawler with scope ``any`` applies:

* every URL of the web that is discovered is decided once (duplicates are ignored);
* a host whose robots.txt answers 503 gets none of its URLs fetched (RFC 9309: assume complete disallow);
* a URL its host's robots rules disallow for the product token is not fetched;
* a redirect (301) is fetched and its Location is a new URL, decided like any other;
* with ``honor_nofollow``, links of a nofollow page (meta or ``X-Robots-Tag``) and ``rel=nofollow`` links are
  not followed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webtrawl_testweb.robots import PRODUCT_TOKEN, Variant

if TYPE_CHECKING:
    from webtrawl_testweb.model import WebModel


@dataclass(frozen=True, slots=True)
class ExpectedCrawl:
    """The outcome of a correct crawl, as sets of canonical URLs (robots.txt requests are not in them)."""

    fetched: frozenset[str]  # requested: pages and redirects
    redirects: frozenset[str]  # the fetched URLs that answer 301
    disallowed: frozenset[str]  # discovered, refused by the host's robots rules
    unavailable: frozenset[str]  # discovered on a host whose robots.txt answers 503
    hosts: frozenset[str]  # host names whose robots.txt the crawler must ask for

    @property
    def discovered(self) -> frozenset[str]:
        """Every URL that gets a record: fetched, disallowed or unavailable."""
        return self.fetched | self.disallowed | self.unavailable


def expected_crawl(
    model: WebModel, seeds: Iterable[str], *, product_token: str = PRODUCT_TOKEN, honor_nofollow: bool = True
) -> ExpectedCrawl:
    fetched: set[str] = set()
    redirects: set[str] = set()
    disallowed: set[str] = set()
    unavailable: set[str] = set()
    hosts: set[str] = set()
    queue: deque[str] = deque()
    seen: set[str] = set()

    def push(url: str) -> None:
        if url not in seen:
            seen.add(url)
            queue.append(url)

    for seed in seeds:
        push(model.canonical(seed))
    while queue:
        url = queue.popleft()
        located = model.locate(url)
        if located is None:
            continue  # not served by the test web: the crawler's port/host policy refuses it
        scheme, i, target = located
        host = model.host(i)
        hosts.add(host.name)
        if host.variant is Variant.ROBOTS_503:
            unavailable.add(url)
            continue
        if not model.allowed(i, target, product_token):
            disallowed.add(url)
            continue
        fetched.add(url)
        reply = model.respond(scheme, host.name, target)
        if reply.location is not None:
            redirects.add(url)
            push(reply.location)
        elif reply.page is not None and not (honor_nofollow and reply.page.nofollow):
            for link in reply.page.links:
                if not (honor_nofollow and link.nofollow):
                    push(link.url)
    return ExpectedCrawl(
        frozenset(fetched),
        frozenset(redirects),
        frozenset(disallowed),
        frozenset(unavailable),
        frozenset(hosts),
    )
