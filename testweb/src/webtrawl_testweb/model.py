"""The synthetic web: which hosts exist, what every URL answers and which links each page holds.

Everything is a pure function of ``(seed, n_hosts, options, ports, corpus_size)``: the server only renders
what :meth:`WebModel.respond` says and the tests compare a crawl with :meth:`WebModel.expected_crawl`, so the
two cannot disagree. Nothing is precomputed per page: a page's links come from a PRNG seeded with ``(seed,
host, page)`` and per-host facts from a hash, so answering a request costs O(links) however many hosts there
are.

Hosts are ``site<i>.test``, served over http when ``i % 4 == 0`` and https otherwise. Host ``i`` has
``n_pages`` pages (``options.min_pages..max_pages``): ``/`` (page 0) and ``/p/<k>.html``; every page links
home, to a few pages of its own host, to a few pages of other hosts, and the root links to the next host's
root (a ring, so nearly every host is reachable from any seed). Other paths on every host:

* ``/p/<n_pages>.html``: an orphan page, served but never linked;
* ``/r/<k>``: 301 to page ``k`` of the same host (linked from about 30% of pages);
* ``/n/<k>.html``: a nofollow target, linked only through ``rel="nofollow"`` or from a nofollow page, so a
  crawl that honours nofollow never asks for one;
* anything else, and any query string: 404.

Variant of host ``i`` by ``i % 10``:

==  ===============  =========================================================================================
 0  ALLOW_ALL        robots.txt allows everything
 1  PRIVATE          ``Disallow: /private/``; every page links to ``/private/<k>.html`` (served 200 if asked)
 2  CRAWL_DELAY      ``Crawl-delay: 1`` (``options.crawl_delay``) for ``*``
 3  ROBOTS_404       robots.txt answers 404: everything allowed
 4  ROBOTS_503       robots.txt always answers 503: no page of the host may be fetched (served if asked)
 5  TOKEN_GROUP      ``otherbot`` disallows ``/``, ``*`` disallows /p/1.html, ``webtrawl`` disallows /p/2.html
 6  ROBOTS_REDIRECT  robots.txt is a 301 to /robots-real.txt, which disallows /p/1.html
 7  X_ROBOTS_TAG     page 1 answers with the header ``X-Robots-Tag: nofollow`` (and links /n/1.html)
 8  META_NOFOLLOW    page 1 carries ``<meta name="robots" content="nofollow">`` (and links /n/1.html)
 9  CROSS_REDIRECT   the root links to ``/away``, a 301 to the root of another host
==  ===============  =========================================================================================

A fraction ``options.corpus_fraction`` of the pages (never a nofollow page) is a real page from the corpus
with this page's links injected before ``</body>``. Its own links point to real hosts on ports 80/443 (refused
by a crawler restricted to the test web's ports) and to relative paths that answer 404 here: those 404 fetches
are not in :meth:`WebModel.expected_fetches`; :meth:`WebModel.is_known` tells them apart.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from webtrawl_testweb import robots
from webtrawl_testweb.expect import ExpectedCrawl, expected_crawl
from webtrawl_testweb.robots import PRODUCT_TOKEN, Variant

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_RE = re.compile(r"site(0|[1-9][0-9]*)\.test")
_PAGE_RE = re.compile(r"/p/([1-9][0-9]*)\.html")
_REDIRECT_RE = re.compile(r"/r/(0|[1-9][0-9]*)")
_LEAF_RE = re.compile(r"/(n|private)/(0|[1-9][0-9]*)\.html")
_NOFOLLOW_RELS = ("nofollow", "ugc nofollow", "noopener NoFollow")
_TEXT = (
    "crawler web page link host robots polite frontier fetch parse queue redis shard lease budget delay "
    "archive record header body title anchor canonical scheme port address naïve café Grüße déjà vu "
    "über façade 東京 ciudad año garçon smörgåsbord jalapeño piñata crème brûlée"
)
_WORDS = tuple(_TEXT.split())


def build_url(scheme: str, host: str, port: int, target: str) -> str:
    """``scheme://host[:port]target``, the port left out when it is the scheme's default (canonical form)."""
    if DEFAULT_PORTS.get(scheme) == port:
        return f"{scheme}://{host}{target}"
    return f"{scheme}://{host}:{port}{target}"


@dataclass(frozen=True, slots=True)
class WebOptions:
    """Shape of the web. Changing any field changes the web (all fields feed the PRNG or the tables)."""

    min_pages: int = 3
    max_pages: int = 12
    intra_links: int = 3
    cross_links: int = 2
    redirect_link_rate: float = 0.3
    nofollow_link_rate: float = 0.5
    corpus_fraction: float = 0.1
    crawl_delay: float = 1.0
    filler_words: int = 80

    def __post_init__(self) -> None:
        if not 3 <= self.min_pages <= self.max_pages:
            raise ValueError("need 3 <= min_pages <= max_pages (the robots variants name pages 1 and 2)")
        if self.intra_links < 1 or self.cross_links < 1:
            raise ValueError("intra_links and cross_links must be at least 1")
        for rate in (self.redirect_link_rate, self.nofollow_link_rate, self.corpus_fraction):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"rates must be within [0, 1], not {rate}")


@dataclass(frozen=True, slots=True)
class Host:
    index: int
    name: str
    scheme: str
    port: int
    variant: Variant
    n_pages: int  # linked pages 0..n_pages-1; page n_pages is the orphan

    @property
    def origin(self) -> str:
        return build_url(self.scheme, self.name, self.port, "")


@dataclass(frozen=True, slots=True)
class Link:
    href: str  # as written in the HTML (absolute, root-relative, document-relative, maybe with a fragment)
    url: str  # the canonical absolute URL it resolves to
    rel: str = ""

    @property
    def nofollow(self) -> bool:
        return "nofollow" in self.rel.lower().split()


@dataclass(frozen=True, slots=True)
class Page:
    host: Host
    path: str
    url: str
    title: str
    text: str
    links: tuple[Link, ...]
    meta_nofollow: bool = False
    header_nofollow: bool = False
    corpus: int | None = None  # index into the corpus: a real page with ``links`` injected

    @property
    def nofollow(self) -> bool:
        return self.meta_nofollow or self.header_nofollow


@dataclass(frozen=True, slots=True)
class Reply:
    """What one URL answers: an HTML page to render, or a status with a small body and maybe a Location."""

    status: int
    page: Page | None = None
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    location: str | None = None
    headers: tuple[tuple[str, str], ...] = ()  # more response headers (ETag, Last-Modified...)


_NOT_FOUND = Reply(404, body=b"not found\n")
_UNAVAILABLE = Reply(503, body=b"robots.txt is unavailable\n")


def _hash(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


class WebModel:
    """The test web of ``n_hosts`` hosts for ``seed``; the ports are parameters: they are known after bind."""

    def __init__(
        self,
        n_hosts: int,
        seed: int = 0,
        *,
        http_port: int = 80,
        https_port: int = 443,
        options: WebOptions | None = None,
        corpus_size: int = 0,
    ) -> None:
        if n_hosts < 1:
            raise ValueError("the test web needs at least one host")
        self.n_hosts = n_hosts
        self.seed = seed
        self.ports = {"http": http_port, "https": https_port}
        self.options = options or WebOptions()
        self.corpus_size = corpus_size

    # --- hosts ----------------------------------------------------------------------------------------------
    def host(self, i: int) -> Host:
        if not 0 <= i < self.n_hosts:
            raise IndexError(f"no host {i} in a web of {self.n_hosts}")
        scheme = "http" if i % 4 == 0 else "https"
        opts = self.options
        n_pages = opts.min_pages + _hash(self.seed, i, "pages") % (opts.max_pages - opts.min_pages + 1)
        return Host(i, f"site{i}.test", scheme, self.ports[scheme], Variant(i % 10), n_pages)

    def hosts(self) -> Iterator[Host]:
        return (self.host(i) for i in range(self.n_hosts))

    def hosts_with(self, variant: Variant) -> list[Host]:
        return [self.host(i) for i in range(variant, self.n_hosts, 10)]

    def host_index(self, name: str) -> int | None:
        m = _HOST_RE.fullmatch(name.lower())
        if m is None or int(m.group(1)) >= self.n_hosts:
            return None
        return int(m.group(1))

    def url(self, i: int, target: str = "/") -> str:
        host = self.host(i)
        return build_url(host.scheme, host.name, host.port, target)

    @staticmethod
    def page_path(k: int) -> str:
        return "/" if k == 0 else f"/p/{k}.html"

    def seeds(self, count: int = 3) -> list[str]:
        """Roots of the first ``count`` hosts whose robots.txt is usable: good crawl seeds."""
        usable = (i for i in range(self.n_hosts) if i % 10 != Variant.ROBOTS_503)
        return [self.url(i) for _, i in zip(range(count), usable, strict=False)]

    def orphan_urls(self) -> list[str]:
        return [self.url(h.index, self.page_path(h.n_pages)) for h in self.hosts()]

    # --- robots ---------------------------------------------------------------------------------------------
    def allowed(self, i: int, target: str, product_token: str = PRODUCT_TOKEN) -> bool:
        return robots.allows(Variant(i % 10), self.options.crawl_delay, product_token, target)

    def crawl_delays(self, product_token: str = PRODUCT_TOKEN) -> dict[str, float]:
        """Host name -> the Crawl-delay its robots.txt asks of ``product_token`` (only hosts that set one)."""
        delays = {}
        for variant in Variant:
            group = robots.select_group(variant, self.options.crawl_delay, product_token)
            if group is not None and group.crawl_delay is not None:
                delays.update({h.name: group.crawl_delay for h in self.hosts_with(variant)})
        return delays

    def _robots(self, host: Host, target: str) -> Reply:
        variant = host.variant
        if target == "/robots.txt":
            if variant is Variant.ROBOTS_404:
                return _NOT_FOUND
            if variant is Variant.ROBOTS_503:
                return _UNAVAILABLE
            if variant is Variant.ROBOTS_REDIRECT:
                return Reply(301, body=b"moved\n", location=self.url(host.index, "/robots-real.txt"))
        elif variant is not Variant.ROBOTS_REDIRECT:  # /robots-real.txt: only where robots.txt points to it
            return _NOT_FOUND
        return Reply(200, body=robots.robots_text(host.name, variant, self.options.crawl_delay))

    # --- pages ----------------------------------------------------------------------------------------------
    def respond(self, scheme: str, host_name: str, target: str) -> Reply:
        """The answer to ``GET target`` (path + query, as sent) on ``host_name`` over ``scheme``."""
        i = self.host_index(host_name)
        if i is None:
            return _NOT_FOUND
        host = self.host(i)
        if target == "/robots.txt" and host.variant is Variant.ROBOTS_503:
            return _UNAVAILABLE  # on either scheme
        if scheme != host.scheme:  # the host lives on the other scheme: send the client there, as sites do
            return Reply(301, body=b"moved\n", location=self.url(i, target))
        if "?" in target:
            return _NOT_FOUND
        if target in ("/robots.txt", "/robots-real.txt"):
            return self._robots(host, target)
        if target == "/":
            return Reply(200, page=self.page(i, 0))
        if m := _PAGE_RE.fullmatch(target):
            k = int(m.group(1))
            return Reply(200, page=self.page(i, k)) if k <= host.n_pages else _NOT_FOUND
        if m := _REDIRECT_RE.fullmatch(target):
            k = int(m.group(1))
            return (
                Reply(301, body=b"moved\n", location=self.url(i, self.page_path(k))) if k < host.n_pages else _NOT_FOUND
            )
        if m := _LEAF_RE.fullmatch(target):
            kind, k = m.group(1), int(m.group(2))
            if k < host.n_pages and (kind == "n" or host.variant is Variant.PRIVATE):
                return Reply(200, page=self._leaf(host, kind, k))
            return _NOT_FOUND
        if target == "/away" and host.variant is Variant.CROSS_REDIRECT and self.n_hosts > 1:
            return Reply(301, body=b"moved\n", location=self.url(self._away_target(i)))
        return _NOT_FOUND

    def respond_url(self, url: str) -> Reply:
        located = self.locate(url)
        if located is None:
            return _NOT_FOUND
        scheme, i, target = located
        return self.respond(scheme, f"site{i}.test", target)

    def is_known(self, url: str) -> bool:
        """Whether ``url`` is part of the model (anything but a 404), e.g. to set corpus-link 404s apart."""
        return self.respond_url(url).status != 404

    def locate(self, url: str) -> tuple[str, int, str] | None:
        """``(scheme, host index, target)`` of a URL this web's server answers, else ``None``."""
        parts = urlsplit(url)
        i = self.host_index(parts.hostname or "")
        if i is None or parts.scheme not in self.ports:
            return None
        try:
            port = parts.port or DEFAULT_PORTS[parts.scheme]
        except ValueError:  # not a port number
            return None
        if port != self.ports[parts.scheme]:
            return None
        return parts.scheme, i, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def canonical(self, url: str) -> str:
        """A URL of this web in the model's form (explicit non-default port, ``/`` for an empty path)."""
        located = self.locate(url)
        if located is None:
            return url
        scheme, i, target = located
        return build_url(scheme, f"site{i}.test", self.ports[scheme], target)

    def page(self, i: int, k: int) -> Page:
        """Page ``k`` of host ``i`` (``k == n_pages`` is the orphan)."""
        host = self.host(i)
        opts = self.options
        rng = random.Random(f"{self.seed}:{i}:{k}")
        meta_nofollow = host.variant is Variant.META_NOFOLLOW and k == 1
        header_nofollow = host.variant is Variant.X_ROBOTS_TAG and k == 1
        links = [Link("/", self.url(i))] if k else []
        links.extend(
            self._intra(host, k, rng.randrange(host.n_pages), rng) for _ in range(rng.randint(1, opts.intra_links))
        )
        if self.n_hosts > 1:
            if k == 0:
                nxt = (i + 1) % self.n_hosts
                links.append(Link(self.url(nxt), self.url(nxt)))
            for _ in range(rng.randint(1, opts.cross_links)):
                j = rng.randrange(self.n_hosts - 1)
                j += j >= i
                url = self.url(j, self.page_path(rng.randrange(self.host(j).n_pages)))
                links.append(Link(url, url))
        if rng.random() < opts.redirect_link_rate:
            target = f"/r/{rng.randrange(host.n_pages)}"
            links.append(Link(target, self.url(i, target)))
        if host.variant is Variant.PRIVATE:
            links.append(Link(f"/private/{k}.html", self.url(i, f"/private/{k}.html")))
        if host.variant is Variant.CROSS_REDIRECT and k == 0 and self.n_hosts > 1:
            links.append(Link("/away", self.url(i, "/away")))
        nofollow_target = f"/n/{min(k, host.n_pages - 1)}.html"
        if meta_nofollow or header_nofollow:
            links.append(Link(nofollow_target, self.url(i, nofollow_target)))
        elif rng.random() < opts.nofollow_link_rate:
            links.append(Link(nofollow_target, self.url(i, nofollow_target), rng.choice(_NOFOLLOW_RELS)))
        corpus = None
        if self.corpus_size and not (meta_nofollow or header_nofollow) and rng.random() < opts.corpus_fraction:
            corpus = rng.randrange(self.corpus_size)
        path = self.page_path(k)
        return Page(
            host=host,
            path=path,
            url=self.url(i, path),
            title=f"site {i} page {k}",
            text=" ".join(rng.choice(_WORDS) for _ in range(opts.filler_words)),
            links=tuple(links),
            meta_nofollow=meta_nofollow,
            header_nofollow=header_nofollow,
            corpus=corpus,
        )

    def _intra(self, host: Host, k_from: int, k_to: int, rng: random.Random) -> Link:
        """A link to page ``k_to`` of the same host, written in one of the forms real pages use."""
        path = self.page_path(k_to)
        url = self.url(host.index, path)
        form = rng.random()
        if form < 0.2:
            href = url
        elif form < 0.4 and k_to:
            href = f"{k_to}.html" if k_from else f"p/{k_to}.html"  # document-relative
        elif form < 0.5:
            href = f"{path}#part-{k_to}"
        else:
            href = path
        return Link(href, url)

    def _leaf(self, host: Host, kind: str, k: int) -> Page:
        """A nofollow target or a private page: a small page that links only home."""
        path = f"/{kind}/{k}.html"
        title = f"site {host.index} {'nofollow target' if kind == 'n' else 'private page'} {k}"
        return Page(host, path, self.url(host.index, path), title, title, (Link("/", self.url(host.index)),))

    def _away_target(self, i: int) -> int:
        j = _hash(self.seed, i, "away") % (self.n_hosts - 1)
        return j + (j >= i)

    # --- the crawl a correct crawler makes ------------------------------------------------------------------
    def expected_crawl(
        self, seeds: Iterable[str], *, product_token: str = PRODUCT_TOKEN, honor_nofollow: bool = True
    ) -> ExpectedCrawl:
        return expected_crawl(self, seeds, product_token=product_token, honor_nofollow=honor_nofollow)

    def expected_fetches(
        self, seeds: Iterable[str], *, product_token: str = PRODUCT_TOKEN, honor_nofollow: bool = True
    ) -> frozenset[str]:
        """The URLs (pages and redirects, not robots.txt) a correct crawl with scope ``any`` fetches."""
        return self.expected_crawl(seeds, product_token=product_token, honor_nofollow=honor_nofollow).fetched
