"""The realistic web: what a broad crawl meets, served for thousands of host names from the real corpus pages.

``trawl bench --web realistic`` crawls it; the synthetic :class:`webtrawl_testweb.model.WebModel` stays for tests
that compare a crawl with an exact prediction. Everything here is a pure function of ``(seed, n_hosts, options,
ports, corpus)``:

* **Hosts** ``site<i>.test``. Host ``i`` stands for real host ``universe[i % len(universe)]`` (the host names
  the corpus names, see :mod:`webtrawl_testweb.realpages`), replica ``i // len(universe)``. Only
  ``options.seeds`` roots are seeds: every other host is found through links, as a broad crawl finds them.
* **Pages**: every path of a host answers a corpus page (one of the real host's own pages when the corpus has
  some, else any), except ~``missing_share`` of the paths (404). Each absolute URL in the page points to a test
  host: the page's own real host becomes the serving host, any other real host ``R`` becomes one replica of ``R``
  picked by ``(seed, serving host, R)``. So a page keeps its ~100 absolute links and the share of them that leave
  its host, and different hosts' links to a popular site spread over its replicas. Relative links stay relative.
* **robots.txt** (independent draw per host): ``robots_503_share`` answer 503 (the host may not be crawled),
  ``big_robots_share`` serve a ~600 KB file of ~16,000 rules, ``crawl_delay_share`` a file with a group for our
  token with ``Crawl-delay``, and ordinary files for the rest of ``robots_share``; the others answer 404.
* **Faults** (another draw): ``fault_share`` of the hosts misbehave one way each (:data:`FAULTS`) on about half
  of their URLs: 503 + Retry-After, 8 KB/s bodies, 301 chains and redirect loops, PDFs.
* **Big bodies**: on any host, ``huge_share`` of the page URLs (roots too) answer a 12 MB page and
  ``bomb_share`` a gzip bomb: drawn per URL, so a crawl meets them at those rates per page (issue 21: about 1 page
  in 100 each), whichever hosts it happens to visit.
* **Schemes**: ``https_share`` of the hosts are HTTPS-only (the test CA), the rest HTTP; asked on the wrong
  scheme a host redirects to its own, as sites do.
* **Compression**: ``gzip_share`` of the hosts send their pages gzip-encoded to a request that accepts gzip, as
  most real servers do (the corpus pages are ~40 KB each that way, 174 KB decoded). Issue 21's real web moved
  131-155 KB per request with 185 KB pages, 1 request in 100 a 12 MB body and ~23% robots.txt: only compressed
  pages (~44 KB) add up to that. Robots.txt files, faults and the 12 MB bodies go as they are. ``br_share`` of the
  hosts (off by default: how often the real web answers a crawler in brotli is not known) send their pages
  brotli-encoded instead to a request that accepts ``br``, as CDNs that prefer it do; a parser decodes brotli at
  about half gzip's speed (RESULTS.md), a cost only such a run shows.
* **Servers** (off by default): ``close_share`` of the hosts close the connection after every answer (no
  keep-alive), ``headers_share`` send the ~1.3 KB of headers a real site's answers carry (:data:`SERVER_HEADERS`).
* **Latency** (off by default): each answer starts after a wait drawn around ``latency_ms`` (exponential), standing
  for the real web's DNS, TCP and TLS round trips and servers' think time, which loopback has none of: what keeps a
  real crawl's requests in flight longer, so the requests in flight (``--concurrency``), not the CPU, may bound its
  pages per second.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import random
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import brotli

from webtrawl.deflate import MAX_LEVEL, ZLIB
from webtrawl_testweb import chaosbodies, realrobots
from webtrawl_testweb.model import build_url
from webtrawl_testweb.realheaders import SERVER_HEADERS
from webtrawl_testweb.realpages import Template, Templates


class RobotsKind(enum.IntEnum):
    NONE = 0  # 404
    ORDINARY = 1
    BIG = 2
    CRAWL_DELAY = 3
    UNAVAILABLE = 4  # 503


FAULTS = ("unavailable", "slow", "redirects", "pdf")
SLOW_RATE = 8 * 1024  # bytes per second of a slow host's bodies
RETRY_AFTER_S = 30
REDIRECT_HOPS = 3
PDF_SIZE = 256 * 1024


@dataclass(frozen=True, slots=True)
class RealisticOptions:
    robots_share: float = 0.35  # hosts whose robots.txt answers 200 (big and crawl-delay ones included)
    big_robots_share: float = 0.05
    crawl_delay_share: float = 0.03
    robots_503_share: float = 0.05
    fault_share: float = 0.07  # ~1.75% of the hosts for each fault of FAULTS
    huge_share: float = 0.01  # page URLs that answer a 12 MB page
    bomb_share: float = 0.01  # page URLs that answer a gzip bomb
    https_share: float = 0.80
    missing_share: float = 0.03  # paths that answer 404
    close_share: float = 0.0  # hosts that close the connection after every answer
    headers_share: float = 0.0  # hosts whose answers carry SERVER_HEADERS
    gzip_share: float = 0.85  # hosts that gzip their pages for a client that accepts it (see the module docstring)
    br_share: float = 0.0  # hosts that send their pages in brotli to a client that accepts it (drawn apart from gzip)
    crawl_delay: float = 5.0
    latency_ms: float = 0.0  # mean wait before each answer starts (exponential): the real web's round trips
    seeds: int = 10

    def __post_init__(self) -> None:
        if self.big_robots_share + self.crawl_delay_share > self.robots_share:
            raise ValueError("big and crawl-delay robots.txt files are part of robots_share")
        if self.robots_share + self.robots_503_share > 1.0:
            raise ValueError("robots_share + robots_503_share must not exceed 1")
        if self.missing_share + self.huge_share + self.bomb_share > 1.0:
            raise ValueError("missing_share + huge_share + bomb_share must not exceed 1")
        for share in (
            *(self.fault_share, self.https_share, self.missing_share, self.huge_share, self.bomb_share),
            *(self.close_share, self.headers_share, self.gzip_share, self.br_share),
        ):
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"shares must be within [0, 1], not {share}")
        if self.seeds < 1:
            raise ValueError("the realistic web needs at least one seed")
        if self.latency_ms < 0:
            raise ValueError(f"latency_ms must not be negative, not {self.latency_ms}")


def parse_options(pairs: Sequence[str], seeds: int) -> RealisticOptions:
    """``RealisticOptions`` from ``name=value`` pairs (``https_share=0``, ``fault_share=0.1``, ...) and ``seeds``."""
    fields = {f.name: f for f in dataclasses.fields(RealisticOptions)}
    values: dict[str, float | int] = {"seeds": seeds}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in fields:
            raise ValueError(f"not a realistic-web option: {pair!r} (name=value; names: {', '.join(fields)})")
        try:
            values[name] = int(value) if fields[name].type in ("int", int) else float(value)
        except ValueError:
            raise ValueError(f"not a number: {pair!r}") from None
    return RealisticOptions(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RealReply:
    """One answer: status, body (in pieces), headers, and ``rate`` (bytes/s, 0: at once) to send the body at.

    ``kind`` names what was served for the server's counters (``page``, ``robots-big``, ``fault-bomb``, ...)."""

    status: int
    body: tuple[bytes, ...] = ()
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    rate: int = 0
    kind: str = "page"
    close: bool = False  # no keep-alive: the server closes the connection after this answer
    decoded: int = 0  # the body's size before its Content-Encoding (0: sent as it is)


_HOST_RE = re.compile(r"site(0|[1-9][0-9]*)\.test")
_HOP_RE = re.compile(r"/_hop/([0-9]+)(/.*)")
_LOOP_RE = re.compile(r"/_loop/([ab])(/.*)")
_NOT_FOUND = RealReply(404, (b"not found\n",), kind="404")
_ROBOTS_404 = RealReply(404, (b"not found\n",), kind="robots-404")
_ROBOTS_503 = RealReply(503, (b"robots.txt is unavailable\n",), kind="robots-503")
# ISA-L's level 2 (about zlib's 1, what nginx uses by default: ~40 KB a corpus page) at ~0.23 ms a page for the test
# web; zlib's level 1 where ISA-L is missing.
_GZIP_LEVEL = 2 if MAX_LEVEL == 3 else 1
# Brotli's quality 1: ~0.7 ms a corpus page for the test web (quality 5 took ~3.5) at ~39 KB, about gzip's size; the
# decoder's cost hardly depends on the quality.
_BROTLI_QUALITY = 1


def _gzipped(reply: RealReply) -> RealReply:
    body = b"".join(reply.body)
    z = ZLIB.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return _encoded(reply, body, z.compress(body) + z.flush(), "gzip")


def _brotlied(reply: RealReply) -> RealReply:
    body = b"".join(reply.body)
    return _encoded(reply, body, brotli.compress(body, quality=_BROTLI_QUALITY), "br")


def _encoded(reply: RealReply, body: bytes, packed: bytes, coding: str) -> RealReply:
    headers = (*reply.headers, ("Content-Encoding", coding), ("Vary", "Accept-Encoding"))
    return dataclasses.replace(reply, body=(packed,), headers=headers, decoded=len(body))


def _unit(*parts: object) -> float:
    """A uniform draw in [0, 1) from ``parts``."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@functools.cache
def _pdf() -> bytes:
    head = b"%%PDF-1.5\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n3 0 obj << /Length %d >>\nstream\n"
    data = random.Random(7).randbytes(PDF_SIZE)
    return head % len(data) + data + b"\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def warm_up() -> None:
    """Build the big bodies once (cached) before the server answers anything."""
    chaosbodies.huge_page(chaosbodies.HUGE_SIZE)
    chaosbodies.gzip_bomb(chaosbodies.BOMB_SIZE)
    _pdf()
    realrobots.warm_up()


class RealisticWeb:
    """The realistic web of ``n_hosts`` hosts over ``templates`` (see the module docstring)."""

    def __init__(
        self,
        n_hosts: int,
        templates: Templates,
        seed: int = 0,
        *,
        http_port: int = 80,
        https_port: int = 443,
        options: RealisticOptions | None = None,
    ) -> None:
        if n_hosts < 1:
            raise ValueError("the test web needs at least one host")
        if not len(templates):
            raise ValueError("the realistic web needs the corpus pages (--corpus-dir)")
        self.n_hosts = n_hosts
        self.seed = seed
        self.templates = templates
        self.options = opts = options or RealisticOptions()
        self.ports = {"http": http_port, "https": https_port}
        self._universe = len(templates.universe)
        self._replicas = max(1, -(-n_hosts // self._universe))
        self._names = [name.encode() for name in templates.universe]
        self.schemes = ["https" if _unit(seed, i, "scheme") < opts.https_share else "http" for i in range(n_hosts)]
        self.robots = [self._robots_kind(_unit(seed, i, "robots")) for i in range(n_hosts)]
        self.faults: list[str | None] = [self._fault(_unit(seed, i, "fault")) for i in range(n_hosts)]
        self._salt = [zlib.crc32(f"{seed}:{i}".encode()) for i in range(n_hosts)]
        self._close = [_unit(seed, i, "close") < opts.close_share for i in range(n_hosts)]
        self._headers = [_unit(seed, i, "headers") < opts.headers_share for i in range(n_hosts)]
        self._gzip = [_unit(seed, i, "gzip") < opts.gzip_share for i in range(n_hosts)]
        self._br = [_unit(seed, i, "br") < opts.br_share for i in range(n_hosts)]
        self._prefix = [build_url(s, f"site{i}.test", self.ports[s], "").encode() for i, s in enumerate(self.schemes)]

    # --- hosts ----------------------------------------------------------------------------------------------
    def _robots_kind(self, u: float) -> RobotsKind:
        o = self.options
        for kind, share in (
            (RobotsKind.UNAVAILABLE, o.robots_503_share),
            (RobotsKind.BIG, o.big_robots_share),
            (RobotsKind.CRAWL_DELAY, o.crawl_delay_share),
            (RobotsKind.ORDINARY, o.robots_share - o.big_robots_share - o.crawl_delay_share),
        ):
            if u < share:
                return kind
            u -= share
        return RobotsKind.NONE

    def _fault(self, u: float) -> str | None:
        share = self.options.fault_share
        return FAULTS[min(len(FAULTS) - 1, int(u / share * len(FAULTS)))] if u < share else None

    def host_index(self, name: str) -> int | None:
        m = _HOST_RE.fullmatch(name)
        if m is None or int(m.group(1)) >= self.n_hosts:
            return None
        return int(m.group(1))

    def url(self, i: int, target: str = "/") -> str:
        return self._prefix[i].decode() + target

    def seeds(self, count: int | None = None) -> list[str]:
        """Roots of the first hosts with corpus pages of their own, a usable robots.txt, no fault and a page at "/"."""
        count = self.options.seeds if count is None else count
        good = [
            i
            for i in range(self.n_hosts)
            if self.faults[i] is None
            and self.robots[i] in (RobotsKind.NONE, RobotsKind.ORDINARY)
            and self._drawn(zlib.crc32(b"/", self._salt[i]), False) is None
        ]
        own = [i for i in good if i % self._universe in self.templates.by_host]
        return [self.url(i) for i in (own + [i for i in good if i not in own])[:count]]

    def link_target(self, i: int, real: int) -> int:
        """The test host that links of a page served by host ``i`` to universe host ``real`` point to."""
        if real == i % self._universe:
            return i
        j = real + self._universe * (zlib.crc32(self._names[real], self._salt[i]) % self._replicas)
        if j < self.n_hosts:
            return j
        return real if real < self.n_hosts else real % self.n_hosts

    # --- answers --------------------------------------------------------------------------------------------
    def respond(self, scheme: str, host_name: str, target: str, *, gzip: bool = False, br: bool = False) -> RealReply:
        """The answer to ``GET target`` (path + query, as sent) on ``host_name`` over ``scheme``; ``gzip``, ``br``:
        the request accepts an answer in that coding (a host of both shares prefers brotli)."""
        i = self.host_index(host_name)
        if i is None:
            return _NOT_FOUND
        reply = self._answer(i, scheme, target)
        if reply.kind == "page":
            if br and self._br[i]:
                reply = _brotlied(reply)
            elif gzip and self._gzip[i]:
                reply = _gzipped(reply)
        if not (self._close[i] or self._headers[i]):
            return reply
        headers = reply.headers + SERVER_HEADERS if self._headers[i] else reply.headers
        return dataclasses.replace(reply, headers=headers, close=self._close[i])

    def _answer(self, i: int, scheme: str, target: str) -> RealReply:
        if target == "/robots.txt" and self.robots[i] is RobotsKind.UNAVAILABLE:
            return _ROBOTS_503  # on either scheme
        if scheme != self.schemes[i]:
            return RealReply(301, (b"moved\n",), headers=(("Location", self.url(i, target)),), kind="scheme-redirect")
        if target == "/robots.txt":
            return self._robots(i)
        h = zlib.crc32(target.encode(), self._salt[i])
        fault = self.faults[i]
        if fault is not None:
            reply = self._faulty(i, fault, target, h)
            if reply is not None:
                return reply
        reply = self._drawn(h, fault is None and target != "/")
        return self.page(i, h) if reply is None else reply

    def _drawn(self, h: int, missing: bool) -> RealReply | None:
        """What a URL answers by its own draw, if anything: 404 (only where ``missing``: not on faulty hosts, never
        a root), a 12 MB page or a gzip bomb (roots too: a sixth of a crawl's pages are roots other hosts link to)."""
        o = self.options
        u = (h >> 8) % 10_000 / 10_000
        if missing and u < o.missing_share:
            return _NOT_FOUND
        u -= o.missing_share
        if 0 <= u < o.huge_share:
            return RealReply(200, (chaosbodies.huge_page(chaosbodies.HUGE_SIZE),), "text/html", kind="fault-huge")
        u -= o.huge_share
        if 0 <= u < o.bomb_share:
            body = chaosbodies.gzip_bomb(chaosbodies.BOMB_SIZE)
            return RealReply(200, (body,), "text/html", (("Content-Encoding", "gzip"),), kind="fault-bomb")
        return None

    def page(self, i: int, h: int, *, rate: int = 0, kind: str = "page") -> RealReply:
        """A corpus page served by host ``i`` (``h`` picks which), its absolute URLs pointing to test hosts."""
        own = self.templates.by_host.get(i % self._universe)
        t = self.templates.pages[own[h % len(own)] if own else h % len(self.templates.pages)]
        return RealReply(200, (self.render(t, i),), t.content_type, rate=rate, kind=kind)

    def render(self, t: Template, i: int) -> bytes:
        prefix = self._prefix
        where = {real: prefix[self.link_target(i, real)] for real in t.distinct}
        if t.own >= 0:
            where[t.own] = prefix[i]
        pieces = [b""] * (2 * len(t.slots) + 1)
        pieces[0::2] = t.parts
        pieces[1::2] = [where[real] for real in t.slots]
        return b"".join(pieces)

    def _robots(self, i: int) -> RealReply:
        kind, name = self.robots[i], f"site{i}.test"
        key = self._salt[i]
        if kind is RobotsKind.ORDINARY:
            return RealReply(200, (realrobots.ordinary_robots(name, key),), kind="robots")
        if kind is RobotsKind.BIG:
            return RealReply(200, realrobots.big_robots(name, key), kind="robots-big")
        if kind is RobotsKind.CRAWL_DELAY:
            body = realrobots.crawl_delay_robots(name, key, self.options.crawl_delay)
            return RealReply(200, (body,), kind="robots-crawl-delay")
        return _ROBOTS_404

    def _faulty(self, i: int, fault: str, target: str, h: int) -> RealReply | None:
        """The fault's answer, or None where this URL of the faulty host behaves (about half of them)."""
        if fault == "redirects":
            return self._redirects(i, target, h)
        if h % 2:
            return None
        kind = "fault-" + fault
        if fault == "unavailable":
            headers = (("Retry-After", str(RETRY_AFTER_S)),)
            return RealReply(503, (b"service unavailable\n",), headers=headers, kind=kind)
        if fault == "slow":
            return self.page(i, h >> 1, rate=SLOW_RATE, kind=kind)
        return RealReply(200, (_pdf(),), "application/pdf", kind=kind)

    def _redirects(self, i: int, target: str, h: int) -> RealReply | None:
        """A third of the URLs start a chain of 301s that ends at a page, a third a loop of two redirects."""
        hop, loop = _HOP_RE.fullmatch(target), _LOOP_RE.fullmatch(target)
        if hop is not None:
            n, rest = int(hop.group(1)), hop.group(2)
            return _redirect(self.url(i, f"/_hop/{n - 1}{rest}")) if n > 1 else None
        if loop is not None:
            other = "b" if loop.group(1) == "a" else "a"
            return _redirect(self.url(i, f"/_loop/{other}{loop.group(2)}"), 302 if other == "b" else 301)
        if h % 3 == 0:
            return _redirect(self.url(i, f"/_hop/{REDIRECT_HOPS}{target}"))
        if h % 3 == 1:
            return _redirect(self.url(i, f"/_loop/a{target}"))
        return None

    # --- what a test or a report needs ----------------------------------------------------------------------
    def shares(self) -> dict[str, float]:
        """The share of hosts of each robots.txt kind and fault, and of HTTPS hosts; of page URLs answering a
        12 MB body (``page-huge``) or a gzip bomb (``page-bomb``)."""
        n = self.n_hosts
        out = {f"robots-{k.name.lower()}": sum(r is k for r in self.robots) / n for k in RobotsKind}
        out.update({f"fault-{f}": sum(x == f for x in self.faults) / n for f in FAULTS})
        out["faulty"] = sum(x is not None for x in self.faults) / n
        out["https"] = self.schemes.count("https") / n
        out["page-huge"], out["page-bomb"] = self.options.huge_share, self.options.bomb_share
        return out


def _redirect(location: str, status: int = 301) -> RealReply:
    return RealReply(status, (b"moved\n",), headers=(("Location", location),), kind="fault-redirects")
