"""Hosts ``*.disc.test`` of the test web for URL discovery and politeness keys; nothing else links to them.

The synthetic web (``model.py``) stays exactly as it was: a crawl reaches these hosts only when seeded with them.

* ``smap.disc.test`` (https): robots.txt names a sitemap index (and a sitemap of another host, which a crawler must
  not use) and disallows ``/private/``; its root page links nowhere. The index lists a plain sitemap and a gzip one
  (``application/gzip``); together they list the ``/only/...`` pages, which no link reaches, plus a URL of another
  host and a disallowed one. ``/only/1.html`` reaches further pages only through ``<link rel=canonical/alternate/
  next>``, an ``<iframe>``, a meta refresh and, as requisites, an image, a style sheet and a script;
  ``/only/2.html`` is a frameset; ``/only/3.html`` (HTML) and ``/only/4.html`` (an empty body) name a page in a
  ``Refresh`` response header.
* ``feed.disc.test`` (http): an RSS feed and an Atom feed, each listing pages no link reaches.
* ``text.disc.test`` (http): text sitemaps (one URL per line). robots.txt names ``/sitemap.txt`` (``text/plain``)
  and an index listing ``/more.txt.gz`` (gzip); ``/given.txt`` is one for ``--sitemap``. They list the ``/t/...``
  pages, which no link reaches, and a URL of another host. Its root page links to ``/urls.txt``, a text page of
  URLs that is not a sitemap (nothing names it one): the ``/not/...`` pages it lists must not be fetched.
* ``other.disc.test``: the host the cross-submission rule protects; any request to it is a crawler bug.
* ``dup.disc.test`` (http): ``/a.html`` and ``/b.html`` carry the same long text but for one word (near-duplicates),
  ``/c.html`` another text; only ``/b.html`` links to ``/trap/1.html`` and only ``/c.html`` to ``/c-next.html``.
* ``fresh.disc.test`` (http): ETag / Last-Modified and 304s for recrawls; one page changes on every fetch.
* ``ip<i>.disc.test`` (http, ``i < IP_HOSTS``): many names of one address (they all resolve to 127.0.0.1); each root
  links to two pages of its own and to the next host's root.
* ``rank.disc.test`` and ``hints.disc.test``: the order of a crawl and sitemap hints (``ranking.py``).
* ``watch.disc.test``: a site edited between recrawl rounds, for change tracking (``watch.py``).
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from html import escape

from webtrawl_testweb.model import Reply, build_url
from webtrawl_testweb.ranking import RankingWeb
from webtrawl_testweb.watch import HOST as WATCH_HOST
from webtrawl_testweb.watch import WatchWeb

IP_HOSTS = 8
_HTML = "text/html; charset=utf-8"
_XML = "application/xml"
_NOT_FOUND = Reply(404, body=b"not found\n")
_PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + bytes(20)
LINKED_ONLY = (
    *("/canon.html", "/alt.html", "/next.html", "/frame.html", "/framed.html", "/refreshed.html"),
    *("/header-refreshed.html", "/moved.html"),
)
REQUISITES = ("/img/logo.png", "/css/site.css", "/js/app.js")
_ONLY = tuple(f"/only/{i}.html" for i in range(1, 6))
_ONLY_GZ = tuple(f"/only/gz-{i}.html" for i in range(1, 4))
_POSTS = tuple(f"/post/{i}.html" for i in range(1, 4))
_ENTRIES = tuple(f"/entry/{i}.html" for i in range(1, 3))
_TEXT_LISTED = tuple(f"/t/{i}.html" for i in range(1, 4))
_TEXT_INDEXED = tuple(f"/t/gz-{i}.html" for i in range(1, 3))
_TEXT_GIVEN = ("/t/given.html",)
_TEXT = "text/plain; charset=utf-8"


def _page(title: str, head: str = "", body: str = "") -> Reply:
    text = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>\n{head}</head>\n'
        f"<body><h1>{escape(title)}</h1>\n{body}</body></html>\n"
    )
    return Reply(200, body=text.encode(), content_type=_HTML)


_LAST_MODIFIED = "Mon, 02 Nov 2026 10:00:00 GMT"


def _validated(request: Mapping[str, str], etag: str, reply: Reply) -> Reply:
    """``reply`` with an ETag and a Last-Modified, or a 304 when the request's If-None-Match names that ETag."""
    headers = (("ETag", etag), ("Last-Modified", _LAST_MODIFIED))
    if request.get("If-None-Match") == etag:
        return Reply(304, headers=headers)
    return Reply(reply.status, body=reply.body, content_type=reply.content_type, headers=headers)


def _words(seed: int, n: int) -> list[str]:
    """``n`` words of a fixed vocabulary in a fixed pseudo-random order (a linear congruential step)."""
    vocab = [
        *("crawl", "frontier", "page", "host", "queue", "robots", "sitemap", "feed", "link", "politeness"),
        *("shard", "lease", "archive", "record", "river", "mountain", "lantern", "copper", "violet", "garden"),
        *("harbor", "winter", "meadow", "signal", "pattern", "ledger"),
    ]
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(vocab[x % len(vocab)])
    return out


def _urlset(urls: list[str]) -> bytes:
    items = "".join(
        f"<url><loc>{escape(u)}</loc><lastmod>2026-11-0{1 + i % 9}</lastmod><changefreq>weekly</changefreq>"
        f"<priority>0.{5 + i % 5}</priority></url>\n"
        for i, u in enumerate(urls)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{items}</urlset>\n'
    ).encode()


class DiscoveryWeb:
    """What the ``*.disc.test`` hosts answer; :meth:`respond` returns None for any other host."""

    def __init__(self, http_port: int, https_port: int) -> None:
        self.ports = {"http": http_port, "https": https_port}
        self.changes = 0  # fetches of fresh.disc.test/changes.html: its version
        self.ranking = RankingWeb(http_port)
        self.watch = WatchWeb(http_port)  # edited by tests between recrawl rounds

    def url(self, host: str, path: str, scheme: str = "") -> str:
        scheme = scheme or ("https" if host == "smap.disc.test" else "http")
        return build_url(scheme, host, self.ports[scheme], path)

    # --- what a test needs ----------------------------------------------------------------------------------
    @property
    def sitemap_seed(self) -> str:
        return self.url("smap.disc.test", "/")

    @property
    def feeds(self) -> list[str]:
        return [self.url("feed.disc.test", "/feed.rss"), self.url("feed.disc.test", "/atom.xml")]

    def sitemap_pages(self) -> set[str]:
        """Pages only the sitemaps and feeds list (no link reaches them)."""
        smap = {self.url("smap.disc.test", p) for p in (*_ONLY, *_ONLY_GZ)}
        return smap | {self.url("feed.disc.test", p) for p in (*_POSTS, *_ENTRIES)}

    @property
    def text_sitemap_seed(self) -> str:
        return self.url("text.disc.test", "/")

    @property
    def given_text_sitemap(self) -> str:
        """A text sitemap nothing names: for ``--sitemap``."""
        return self.url("text.disc.test", "/given.txt")

    def text_sitemap_pages(self) -> set[str]:
        """Pages only text sitemaps list: robots.txt's, the index's gzip one and ``--sitemap``'s."""
        return {self.url("text.disc.test", p) for p in (*_TEXT_LISTED, *_TEXT_INDEXED, *_TEXT_GIVEN)}

    def not_a_sitemap(self) -> tuple[str, set[str]]:
        """A linked text page of URLs (not named a sitemap anywhere), and the pages only it lists."""
        return self.url("text.disc.test", "/urls.txt"), {self.url("text.disc.test", "/not/1.html")}

    def linked_only(self) -> set[str]:
        """Pages reached only through link rel, frames, meta refresh and Refresh headers of /only/1.html to 4."""
        return {self.url("smap.disc.test", p) for p in LINKED_ONLY}

    def requisites(self) -> set[str]:
        return {self.url("smap.disc.test", p) for p in REQUISITES}

    def ip_hosts(self) -> list[str]:
        return [f"ip{i}.disc.test" for i in range(IP_HOSTS)]

    def ip_pages(self) -> set[str]:
        return {self.url(h, p) for h in self.ip_hosts() for p in ("/", "/a.html", "/b.html")}

    # --- serving --------------------------------------------------------------------------------------------
    def respond(
        self, scheme: str, host: str, target: str, request_headers: Mapping[str, str] | None = None
    ) -> Reply | None:
        if not host.endswith(".disc.test"):
            return None
        path = target.split("?", 1)[0]
        if host == "fresh.disc.test":
            return self._fresh(path, request_headers or {})
        if host == WATCH_HOST:
            return self.watch.respond(path, request_headers or {})
        if host == "smap.disc.test":
            return self._smap(path)
        if host == "feed.disc.test":
            return self._feed(path)
        if host == "text.disc.test":
            return self._text(path)
        if host == "dup.disc.test":
            return self._dup(path)
        ranked = self.ranking.respond(host, path)
        if ranked is not None:
            return ranked
        if host == "other.disc.test":
            return _page("other") if path != "/robots.txt" else _NOT_FOUND
        if host.startswith("ip") and host[2:-10].isdigit() and int(host[2:-10]) < IP_HOSTS:
            return self._ip(int(host[2:-10]), path)
        return _NOT_FOUND

    def _smap(self, path: str) -> Reply:
        u = self.url
        if path == "/robots.txt":
            text = (
                "User-agent: *\nDisallow: /private/\n\n"
                f"Sitemap: {u('smap.disc.test', '/sitemap-index.xml')}\n"
                f"Sitemap: {u('other.disc.test', '/sitemap.xml')}\n"
            )
            return Reply(200, body=text.encode())
        if path == "/":
            return _page("sitemap host")
        if path == "/sitemap-index.xml":
            items = "".join(
                f"<sitemap><loc>{u('smap.disc.test', p)}</loc></sitemap>\n"
                for p in ("/sitemaps/pages.xml", "/sitemaps/more.xml.gz")
            )
            body = f'<?xml version="1.0"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{items}'
            return Reply(200, body=(body + "</sitemapindex>\n").encode(), content_type=_XML)
        if path == "/sitemaps/pages.xml":
            urls = [u("smap.disc.test", p) for p in _ONLY]
            urls += [u("other.disc.test", "/stolen.html"), u("smap.disc.test", "/private/secret.html")]
            return Reply(200, body=_urlset(urls), content_type=_XML)
        if path == "/sitemaps/more.xml.gz":
            packed = gzip.compress(_urlset([u("smap.disc.test", p) for p in _ONLY_GZ]), mtime=0)
            return Reply(200, body=packed, content_type="application/gzip")
        if path == "/only/1.html":
            head = (
                '<link rel="canonical" href="/canon.html">\n<link rel="alternate" hreflang="de" href="/alt.html">\n'
                '<link rel="next" href="/next.html">\n<meta http-equiv="refresh" content="30; url=/refreshed.html">\n'
                '<link rel="stylesheet" href="/css/site.css">\n<script src="/js/app.js"></script>\n'
            )
            return _page("only 1", head, '<img src="/img/logo.png" alt="">\n<iframe src="/frame.html"></iframe>\n')
        if path == "/only/2.html":
            text = '<!DOCTYPE html>\n<html><head><title>frames</title></head>\n<frameset><frame src="/framed.html">'
            return Reply(200, body=(text + "</frameset></html>\n").encode(), content_type=_HTML)
        if path == "/only/3.html":  # a Refresh response header, as a meta refresh
            return Reply(
                200,
                body=_page("only 3").body,
                content_type=_HTML,
                headers=(("Refresh", "5; url=/header-refreshed.html"),),
            )
        if path == "/only/4.html":  # moved by a Refresh header alone: an empty body of no type
            return Reply(200, content_type="", headers=(("Refresh", "0;URL='/moved.html'"),))
        if path in _ONLY or path in _ONLY_GZ or path in LINKED_ONLY or path.startswith("/private/"):
            return _page(path)
        if path == "/img/logo.png":
            return Reply(200, body=_PNG, content_type="image/png")
        if path == "/css/site.css":
            return Reply(200, body=b"body { color: #222 }\n", content_type="text/css")
        if path == "/js/app.js":
            return Reply(200, body=b"console.log('app');\n", content_type="text/javascript")
        return _NOT_FOUND

    def _feed(self, path: str) -> Reply:
        u = self.url
        if path == "/feed.rss":
            items = "".join(
                f"<item><title>{p}</title><link>{u('feed.disc.test', p)}</link>"
                f"<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>\n"
                for p in _POSTS
            )
            body = f'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>feed</title>\n{items}</channel></rss>\n'
            return Reply(200, body=body.encode(), content_type="application/rss+xml")
        if path == "/atom.xml":
            entries = "".join(
                f'<entry><title>{p}</title><link rel="alternate" href="{u("feed.disc.test", p)}"/>'
                f"<updated>2026-11-02T10:00:00Z</updated></entry>\n"
                for p in _ENTRIES
            )
            body = f'<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><title>atom</title>\n{entries}'
            return Reply(200, body=(body + "</feed>\n").encode(), content_type="application/atom+xml")
        if path in _POSTS or path in _ENTRIES:
            return _page(path)
        return _NOT_FOUND

    def _text(self, path: str) -> Reply:
        u = self.url

        def listing(paths: tuple[str, ...]) -> bytes:
            return "".join(f"{u('text.disc.test', p)}\n" for p in paths).encode()

        if path == "/robots.txt":
            text = f"User-agent: *\nDisallow:\n\nSitemap: {u('text.disc.test', '/sitemap.txt')}\n"
            return Reply(200, body=(text + f"Sitemap: {u('text.disc.test', '/index.xml')}\n").encode())
        if path == "/":
            return _page("text sitemaps", body='<a href="/urls.txt">some URLs</a>\n')
        if path == "/sitemap.txt":  # a BOM, CRLF line ends, a blank line: all allowed
            stolen = f"{u('other.disc.test', '/stolen-text.html')}\n".encode()
            text_body = b"\xef\xbb\xbf" + listing(_TEXT_LISTED).replace(b"\n", b"\r\n") + b"\r\n" + stolen
            return Reply(200, body=text_body, content_type=_TEXT)
        if path == "/index.xml":
            loc = f"<sitemap><loc>{u('text.disc.test', '/more.txt.gz')}</loc></sitemap>"
            index = f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{loc}</sitemapindex>\n'
            return Reply(200, body=index.encode(), content_type=_XML)
        if path == "/more.txt.gz":
            return Reply(200, body=gzip.compress(listing(_TEXT_INDEXED), mtime=0), content_type="application/gzip")
        if path == "/given.txt":
            return Reply(200, body=listing(_TEXT_GIVEN), content_type=_TEXT)
        if path == "/urls.txt":
            return Reply(200, body=listing(("/not/1.html",)), content_type=_TEXT)
        if path in (*_TEXT_LISTED, *_TEXT_INDEXED, *_TEXT_GIVEN, "/not/1.html"):
            return _page(path)
        return _NOT_FOUND

    def _dup(self, path: str) -> Reply:
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a>\n' for p in ("/a.html", "/b.html", "/c.html"))
            return _page("dup home", body=links)
        if path in ("/a.html", "/b.html"):
            words = _words(1, 300)
            if path == "/b.html":
                words[150] = "changed"
            link = '<a href="/trap/1.html">more</a>' if path == "/b.html" else ""
            nav = '<nav><a href="/">home</a> navigation differs on every page ' + path + "</nav>"
            return _page("article", body=f"{nav}<p>{' '.join(words)}</p>{link}\n")
        if path == "/c.html":
            return _page("other article", body=f'<p>{" ".join(_words(2, 300))}</p><a href="/c-next.html">next</a>')
        if path in ("/trap/1.html", "/c-next.html"):
            return _page(path)
        return _NOT_FOUND

    def dup_urls(self) -> dict[str, str]:
        return {
            p.strip("/").split(".")[0]: self.url("dup.disc.test", p)
            for p in ("/", "/a.html", "/b.html", "/c.html", "/trap/1.html", "/c-next.html")
        }

    def fresh_urls(self) -> dict[str, str]:
        return {p: self.url("fresh.disc.test", p) for p in ("/", "/same.html", "/changes.html", "/nodate.html")}

    def _fresh(self, path: str, request: Mapping[str, str]) -> Reply:
        """Pages for recrawls: ``/`` and ``/same.html`` answer 304 to a conditional GET with their ETag,
        ``/changes.html`` is new on every fetch (new ETag), ``/nodate.html`` has no validators and never changes."""
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a>\n' for p in ("/same.html", "/changes.html", "/nodate.html"))
            return _validated(request, '"root-1"', _page("fresh home", body=links))
        if path == "/same.html":
            return _validated(request, '"same-1"', _page("same"))
        if path == "/changes.html":
            self.changes += 1
            return _validated(request, f'"changes-{self.changes}"', _page(f"changes {self.changes}"))
        if path == "/nodate.html":
            return _page("no validators")
        return _NOT_FOUND

    def _ip(self, i: int, path: str) -> Reply:
        if path == "/":
            nxt = self.url(f"ip{(i + 1) % IP_HOSTS}.disc.test", "/")
            links = "".join(f'<a href="{h}">{h}</a>\n' for h in ("/a.html", "/b.html", nxt))
            return _page(f"ip host {i}", body=links)
        if path in ("/a.html", "/b.html"):
            return _page(f"ip host {i} {path}")
        return _NOT_FOUND
