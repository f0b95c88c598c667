"""Hosts of the test web for the order of a crawl (priorities) and for sitemap hints; part of ``*.disc.test``.

* ``rank.disc.test`` (http): a deep chain and many shallow pages. ``/`` links to ``/chain/1`` and to ``/r/<i>``
  (``i`` < SHALLOW), each a 301 to ``/s/<i>``: the redirect targets keep depth 1 but are found late, after
  ``/chain/2`` (depth 2), so a FIFO per host would fetch the chain's deeper pages before them. ``/chain/<i>`` links
  to ``/chain/<i + 1>`` (class ``first``, for a callback that ranks it) up to CHAIN.
* ``hints.disc.test`` (http): robots.txt names ``/sitemap.xml``, which lists ``/lo/<i>`` (priority 0.1) and
  ``/hi/<i>`` (priority 0.9) interleaved, ``/news.html`` (lastmod: :attr:`RankingWeb.news_modified`, which a test
  moves past the page's last fetch) and ``/old.html`` (lastmod:
  :attr:`RankingWeb.old_modified`, in 2020), each with a changefreq. The sitemap has no
  validators: a refetch of a changed one is read again.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from webtrawl_testweb.model import Reply, build_url

SHALLOW = 8
CHAIN = 5
HINTED = 3
_HTML = "text/html; charset=utf-8"
_NOT_FOUND = Reply(404, body=b"not found\n")


def _page(title: str, links: Sequence[tuple[str, str]] = ()) -> Reply:
    body = "".join(f'<a class="{cls}" href="{escape(href)}">{escape(href)}</a>\n' for href, cls in links)
    text = f"<!DOCTYPE html>\n<html><head><title>{escape(title)}</title></head>\n<body><h1>{escape(title)}</h1>\n{body}"
    return Reply(200, body=(text + "</body></html>\n").encode(), content_type=_HTML)


class RankingWeb:
    def __init__(self, http_port: int) -> None:
        self.port = http_port
        self.news_modified = "2026-11-01T10:00:00+00:00"
        self.old_modified = "2020-01-01"  # a test moves it to change the sitemap's bytes for another page's sake

    def url(self, host: str, path: str) -> str:
        return build_url("http", host, self.port, path)

    def rank_pages(self) -> dict[str, int]:
        """Every page of rank.disc.test that answers 200 -> its depth from ``/``."""
        pages = {"/": 0, **{f"/s/{i}": 1 for i in range(SHALLOW)}}
        pages |= {f"/chain/{i}": i for i in range(1, CHAIN + 1)}
        return {self.url("rank.disc.test", p): depth for p, depth in pages.items()}

    def hinted(self, kind: str) -> list[str]:
        """The sitemap's ``hi`` or ``lo`` pages, or [news, old] for ``news``."""
        paths = ["/news.html", "/old.html"] if kind == "news" else [f"/{kind}/{i}" for i in range(HINTED)]
        return [self.url("hints.disc.test", p) for p in paths]

    def respond(self, host: str, path: str) -> Reply | None:
        if host == "rank.disc.test":
            return self._rank(path)
        if host == "hints.disc.test":
            return self._hints(path)
        return None

    def _rank(self, path: str) -> Reply:
        if path == "/":
            return _page("rank", [("/chain/1", ""), *((f"/r/{i}", "") for i in range(SHALLOW))])
        if path.startswith("/r/") and path[3:].isdigit() and int(path[3:]) < SHALLOW:
            return Reply(301, location=f"/s/{path[3:]}")
        if path.startswith("/s/") and path[3:].isdigit() and int(path[3:]) < SHALLOW:
            return _page(path)
        if path.startswith("/chain/") and path[7:].isdigit() and 1 <= int(path[7:]) <= CHAIN:
            i = int(path[7:])
            return _page(path, [(f"/chain/{i + 1}", "first")] if i < CHAIN else [])
        return _NOT_FOUND

    def _hints(self, path: str) -> Reply:
        if path == "/robots.txt":
            return Reply(
                200, body=f"User-agent: *\nAllow: /\nSitemap: {self.url('hints.disc.test', '/sitemap.xml')}\n".encode()
            )
        if path == "/sitemap.xml":
            return Reply(200, body=self._sitemap(), content_type="application/xml")
        if path == "/" or path in ("/news.html", "/old.html") or path[:4] in ("/hi/", "/lo/"):
            return _page(path)
        return _NOT_FOUND

    def _sitemap(self) -> bytes:
        rows = []
        for i in range(HINTED):
            for kind, priority in (("lo", "0.1"), ("hi", "0.9")):
                loc = self.url("hints.disc.test", f"/{kind}/{i}")
                rows.append(f"<url><loc>{loc}</loc><priority>{priority}</priority></url>")
        news, old = self.hinted("news")
        rows.append(
            f"<url><loc>{news}</loc><lastmod>{self.news_modified}</lastmod><changefreq>hourly</changefreq></url>"
        )
        rows.append(f"<url><loc>{old}</loc><lastmod>{self.old_modified}</lastmod><changefreq>daily</changefreq></url>")
        body = "\n".join(rows)
        return f'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}\n</urlset>\n'.encode()
