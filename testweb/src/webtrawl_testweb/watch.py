"""``watch.disc.test``: a small site that a test edits between two recrawl rounds (``--chunks``, ``--changes``).

``round`` is the site's version (1 at start; a test sets 2 before the second round):

* ``/`` links to the pages below (from round 2 to ``/added.html`` too, a page that did not exist before);
* ``/article.html``: an article with three sections; in round 2 one paragraph of "Pricing" says something else;
* ``/stable.html``: the same article text every round, but its bytes differ (a request counter in a comment), so it
  is fetched whole (200, a new payload digest) and its main text is the same;
* ``/removed.html``: 200 in round 1, 404 in round 2, and back (200, another text) from round 3;
* ``/product.html``: a product whose price changes in round 2 (its items change, its text too).

With ``bulk`` set, ``/`` links ``/bulk.html``, which links that many pages ``/bulk/<i>.html`` whose text and ETag
change with their ``bulk_version`` (a conditional GET with the current ETag is answered 304).

And a sitemap no page links to (``/sitemap.xml``, a seed of its own): it lists ``/listed-a.html``,
``/listed-b.html`` and ``/listed-c.html`` (linked from nowhere else, the same every round) until a test sets
``drop_listed``, from then on only a and c. ``/listed-b.html`` itself still answers 200. ``/sitemap.txt`` is the
same list as a text sitemap (one URL per line), for a crawl that names it with ``--sitemap``.

With ``noisy`` set, every article ends with a "Last updated" line and an ad that differ on every request (what
trafilatura keeps as main text: ``--text-exclude`` is for them).

With ``nav_extra`` (paths) set, every page's navigation links those paths too: a change of links only.

A test can move pages (``moved``: path -> redirect status and target path): the old path redirects and the
target serves what the old path would. While a test sets ``failing`` (a status: 503, 500...) every page answers
it: the site is down for a round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from webtrawl_testweb.model import Reply, build_url

HOST = "watch.disc.test"
_HTML = "text/html; charset=utf-8"
CUT_SHORT = -1  # ``failing``: each page's answer stops short of its Content-Length (a timeout or a reset)
LISTED = ("/listed-a.html", "/listed-b.html", "/listed-c.html")
_PAGES = ("/", "/article.html", "/stable.html", "/removed.html", "/product.html")
_FILL = (
    "Every paragraph here is long enough for the main-text extractor to take it as the article's own text "
    "and not as navigation or a footer. "
)


def _html(title: str, body: str, extra: str = "") -> Reply:
    text = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head><body>\n'
        f'<nav><a href="/">Home</a> <a href="/article.html">Article</a></nav>\n'
        f"<article><h1>{title}</h1>\n{body}</article>\n<footer>Watch site footer{extra}</footer></body></html>\n"
    )
    return Reply(200, body=text.encode(), content_type=_HTML)


class WatchWeb:
    def __init__(self, http_port: int) -> None:
        self.port = http_port
        self.reset()
        self._served = 0

    def reset(self) -> None:
        """Back to round 1 with nothing failing, moved or in bulk (the test web is shared by a session's tests)."""
        self.round = 1
        self.drop_listed = False  # the sitemap no longer lists /listed-b.html
        self.failing = 0  # an HTTP status (503...) every page answers while set: a site down for a round
        self.moved: dict[str, tuple[int, str]] = {}  # path -> (redirect status, target path); the target serves it
        self.bulk = 0  # pages /bulk/0.html ... linked from /bulk.html, which / links while there are any
        self.bulk_version: dict[int, int] = {}  # a bulk page's version (1 if absent): its text and its ETag
        self.noisy = False  # each page's article ends with a "Last updated" line and an ad that differ every time
        self.nav_extra: tuple[str, ...] = ()  # paths every page's <nav> links too (its text stays the same)

    def url(self, path: str) -> str:
        return build_url("http", HOST, self.port, path)

    def urls(self) -> dict[str, str]:
        return {path: self.url(path) for path in (*_PAGES, "/added.html")}

    def bulk_urls(self) -> list[str]:
        return [self.url(f"/bulk/{i}.html") for i in range(self.bulk)]

    def respond(self, path: str, request: Mapping[str, str] | None = None) -> Reply | None:
        reply = self._respond(path, request)
        if self.nav_extra and reply is not None and b"</nav>" in reply.body:
            links = "".join(f' <a href="{p}">More</a>' for p in self.nav_extra)
            reply = dataclasses.replace(reply, body=reply.body.replace(b"</nav>", links.encode() + b"</nav>"))
        if not self.noisy or reply is None or b"</article>" not in reply.body:
            return reply
        noise = f'<p class="updated">Last updated: request {self._served}</p><div class="ad">Ad {self._served}</div>'
        body = reply.body.replace(b"</article>", noise.encode() + b"</article>")
        return dataclasses.replace(reply, body=body)

    def _respond(self, path: str, request: Mapping[str, str] | None) -> Reply | None:
        self._served += 1
        if self.failing and path != "/robots.txt":
            if self.failing == CUT_SHORT:  # a body shorter than its Content-Length: the client waits, times out
                return Reply(200, body=b"<html>", content_type=_HTML, headers=(("Content-Length", "100000"),))
            return Reply(self.failing, body=b"down for maintenance\n")
        if path in self.moved:
            status, target = self.moved[path]
            return Reply(status, body=b"moved\n", location=self.url(target))
        moved_from = next((old for old, (_, target) in self.moved.items() if target == path), None)
        if moved_from is not None:
            path = moved_from
        if path == "/":
            pages = _PAGES[1:] + (("/added.html",) if self.round > 1 else ()) + (("/bulk.html",) if self.bulk else ())
            links = "".join(f'<p><a href="{p}">{p}</a> {_FILL}</p>\n' for p in pages)
            return _html("Watch home", links)
        if path == "/added.html" and self.round > 1:
            return _html("Added", _article("This page is new."))
        if path == "/article.html":
            pricing = "Prices went up by ten percent in March." if self.round > 1 else "Prices stay the same all year."
            return _html("Article", _article(pricing))
        if path == "/stable.html":
            return _html("Stable", _article("Nothing here changes."), f"<!-- served {self._served} -->")
        if path == "/removed.html" and self.round != 2:
            return _html("Removed soon", _article("This page goes away." if self.round == 1 else "It is back."))
        if path in ("/sitemap.xml", "/sitemap.txt"):
            listed = [p for p in LISTED if not (self.drop_listed and p == "/listed-b.html")]
            if path == "/sitemap.txt":
                return Reply(200, body="".join(f"{self.url(p)}\n" for p in listed).encode(), content_type="text/plain")
            urls = "".join(f"<url><loc>{self.url(p)}</loc></url>\n" for p in listed)
            body = f'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n'
            return Reply(200, body=body.encode(), content_type="application/xml")
        if path in LISTED:
            return _html(f"Listed {path[8]}", _article(f"Listed page {path[8]} says the same every round."))
        if self.bulk and (path == "/bulk.html" or path.startswith("/bulk/")):
            return self._bulk(path, request or {})
        if path == "/product.html":
            price = "12.50" if self.round > 1 else "10.00"
            body = f'<h2>Garden hose</h2><p class="price">{price}</p><p>{_FILL * 2}</p>'
            return _html("Product", body)
        return Reply(404, body=b"not found\n")

    def _bulk(self, path: str, request: Mapping[str, str]) -> Reply:
        """The bulk pages answer a conditional GET with their ETag with 304, like most servers of static pages."""
        if path == "/bulk.html":
            etag, reply = (
                f'"bulk-{self.bulk}"',
                _html("Bulk", "".join(f'<p><a href="/bulk/{i}.html">{i}</a></p>' for i in range(self.bulk))),
            )
        else:
            name = path[len("/bulk/") : -len(".html")]
            if not name.isdigit() or int(name) >= self.bulk:
                return Reply(404, body=b"not found\n")
            version = self.bulk_version.get(int(name), 1)
            etag, reply = (
                f'"b{name}-v{version}"',
                _html(f"Item {name}", _article(f"Item {name} is at version {version}.")),
            )
        if request.get("If-None-Match") == etag:
            return Reply(304, headers=(("ETag", etag),))
        return Reply(reply.status, body=reply.body, content_type=reply.content_type, headers=(("ETag", etag),))


def _article(pricing: str) -> str:
    return (
        f"<h2>Overview</h2><p>The overview section. {_FILL * 2}</p>\n"
        f"<h2>Pricing</h2><p>{pricing} {_FILL}</p><ul><li>first plan</li><li>second plan</li></ul>\n"
        f"<h2>Support</h2><p>The support section. {_FILL * 2}</p>\n"
    )
