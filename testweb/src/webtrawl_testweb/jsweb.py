"""A small web whose pages need a browser, for the rendering tests and benchmark (``JsWeb``).

Hosts (all on an http and an https listener of 127.0.0.1, test CA; ``--resolve *.test=127.0.0.1``), each with a
robots.txt that disallows ``/private/``. A digit after the first word makes more hosts of a kind (``app7.js.test``,
for benchmarks):

- ``app.js.test``: every page is a shell (an empty ``<div id="root">``, a ``<noscript>`` asking for JavaScript);
  ``/static/app.js`` fetches ``/api/page<path>`` and builds the title, the text and the links: ``/`` links to
  ``/item/1..items``, each item back to ``/`` and item 1 also to ``plain.js.test``.
- ``plain.js.test``: ordinary pages (text and links in the HTML, one small analytics-like script): never a shell.
- ``scroll.js.test``: ``/`` is an infinite-scroll feed: ``/static/scroll.js`` loads screen 0 at once and screen k+1
  (``/api/feed?screen=k+1``) when the reader reaches the bottom, up to ``screens``; screen k links to
  ``/post/k-0`` and ``/post/k-1`` (plain pages).
- ``shop.js.test``: ordinary-looking pages (text in the HTML, not a shell) whose product list
  (``<div class="product"><h2>name</h2></div>``) ``/static/shop.js`` builds from ``/api/products``: extraction rules
  find items only after a render. ``/`` links to ``/more`` in its HTML.
- ``mem.js.test``: ``/`` runs a script that keeps ``mem_mb`` MB of JavaScript arrays (the per-page memory budget).
- ``cookie.js.test``: ``/`` sets a cookie and links to ``/check``, whose title says whether the cookie came back.
- ``sjis.js.test``: ``/`` is a Shift_JIS page linking to ``/search?q=日本`` in its HTML and to ``/js?q=東京`` from
  a script; a browser sends both queries in Shift_JIS (:data:`SJIS_QUERIES`). Any other path is a plain page.
- ``nav.js.test``: ``/`` (text and a link to ``/linked``) sends itself to ``/moved`` by script (``location.href``).
- ``redir.js.test``: ``/`` loads ``/static/old.js``, which redirects to ``/static/new.js`` (it builds a link to
  ``/built``), and fetches ``/api/away``, which redirects to the trap on 127.0.0.2.
- ``slow.js.test``: ``/`` loads ``/static/slow.js``, answered after ``slow_s`` seconds (past Playwright's own 30 s
  default timeout); it sets the title to ``Slow done``.
- ``hang.js.test``: ``/`` builds its title (``Hang built``) and a link to ``/built`` by an inline script, then loads
  ``/static/hang.js``, which is never answered (until the client gives up): a browser user still sees the page.
- ``post.js.test``: ``/`` (a link to ``/linked``) submits a form with ``method=post`` to ``/posted`` on load.
- ``evil.js.test``: ``/`` builds a link to ``/done`` and, meanwhile, fetches ``/private/secret`` (disallowed by
  robots.txt), ``http://127.0.0.2:<trap>/steal`` (an address outside ``--ip-allow 127.0.0.1/32``), an image and a
  script of another host.

Every request's ``X-Key`` header is listed with its host and path in :attr:`JsWeb.keys` (rules' headers).

Render requests are under ``/static/`` and ``/api/`` (:func:`is_subresource`); the access log has the same format
as the main test web's. The listener is also an HTTP proxy: a request in absolute form (``GET http://host/...``) is
served the same and listed in :attr:`JsWeb.proxied`. The **trap** is a TCP listener on 127.0.0.2 that records every
connection made to it: a crawl that keeps the address policy never connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from aiohttp import web
from yarl import URL

from webtrawl_testweb.accesslog import AccessLog, LogEntry
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.server import bind, host_name, request_entry

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
TRAP_HOST = "127.0.0.2"
_SHELL = """<!doctype html><html><head><meta charset="utf-8"><title>Loading</title>
<script src="/static/app.js" defer></script></head>
<body><div id="root"></div><noscript>Please enable JavaScript to use this app.</noscript></body></html>"""
_APP_JS = """
fetch('/api/page' + location.pathname).then(r => r.json()).then(d => {
  document.title = d.title;
  const links = d.links.map(l => '<li><a href="' + l + '">' + l + '</a></li>').join('');
  document.getElementById('root').innerHTML = '<h1>' + d.title + '</h1><p>' + d.text + '</p><ul>' + links + '</ul>';
});
"""
_SCROLL_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Feed</title></head>
<body><div id="feed"></div><script src="/static/scroll.js"></script></body></html>"""
_SCROLL_JS = """
let next = 0, loading = false;
function load() {
  if (loading || next >= %(screens)d) return;
  loading = true;
  const n = next++;
  fetch('/api/feed?screen=' + n).then(r => r.json()).then(d => {
    const div = document.createElement('div');
    div.className = 'screen';
    div.style.height = '1500px';
    div.innerHTML = '<h2>Screen ' + n + '</h2>' + d.links.map(l => '<a href="' + l + '">' + l + '</a> ').join('');
    document.getElementById('feed').appendChild(div);
    loading = false;
  });
}
window.addEventListener('scroll', () => {
  if (window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 200) load();
});
load();
"""
PRODUCTS = ("Red kettle", "Blue mug", "Green teapot")
_SHOP_JS = """
fetch('/api/products').then(r => r.json()).then(d => {
  document.getElementById('products').innerHTML =
    d.map(name => '<div class="product"><h2>' + name + '</h2></div>').join('');
});
"""
_SJIS_PAGE = """<!doctype html><html><head><meta charset="shift_jis"><title>日本語</title></head><body>
<p>日本語のページです。</p><a href="/search?q=日本">検索</a><div id="r"></div>
<script>document.getElementById("r").innerHTML = '<a href="/js?q=東京">東京</a>';</script></body></html>"""
SJIS_QUERIES = ("/search?q=%93%FA%96%7B", "/js?q=%93%8C%8B%9E")  # as a browser sends them from that page
_NAV_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Nav home</title></head>
<body><p>This page moves on.</p><a href="/linked">linked</a><script>location.href = "/moved";</script></body></html>"""
_HANG_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Hang</title></head>
<body><div id="out"></div><script>
document.title = "Hang built";
document.getElementById("out").innerHTML = '<a href="/built">built</a>';
</script><script src="/static/hang.js"></script></body></html>"""
_POST_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Post home</title></head>
<body><p>This page posts a form.</p><a href="/linked">linked</a>
<form method="post" action="/posted"><input type="hidden" name="q" value="1"></form>
<script>document.forms[0].submit();</script></body></html>"""
_REDIR_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Redirects</title></head>
<body><div id="out"></div><script src="/static/old.js"></script><script>fetch("/api/away").catch(() => {});</script>
</body></html>"""
_NEW_JS = """document.getElementById('out').innerHTML = '<a href="/built">built</a>';"""
_SHOP_LIST = b'<div id="products"></div><script src="/static/shop.js"></script></body>'
_MEM_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Memory</title></head><body><p>Big</p><script>
window.keep = [];
for (let i = 0; i < %(chunks)d; i++) window.keep.push(new Array(1 << 17).fill(i + 0.5));
</script></body></html>"""
_EVIL_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Evil</title>
<script src="http://other.js.test:%(port)d/static/lib.js"></script></head>
<body><div id="app"></div><img src="/static/pixel.png"><script>
fetch('/private/secret').catch(() => {});
fetch('http://%(trap)s:%(trap_port)d/steal').catch(() => {});
fetch('/api/ok').then(r => r.text()).then(t => {
  document.getElementById('app').innerHTML = '<p>' + t + '</p><a href="/done">done</a>';
});
</script></body></html>"""


def _plain(title: str, links: list[str], words: int = 80) -> bytes:
    text = " ".join(f"{title.lower()} word{i}" for i in range(words))
    items = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>'
        f"<script>window.analytics = {{page: '{title}'}};</script></head>"
        f"<body><h1>{title}</h1><p>{text}</p><ul>{items}</ul></body></html>"
    ).encode()


def is_subresource(path: str) -> bool:
    """A request a render makes besides its page (scripts and data)."""
    return path.startswith(("/static/", "/api/"))


class JsWeb:
    """The JavaScript web on 127.0.0.1 (ephemeral port) plus the trap on 127.0.0.2; ``with`` or start/stop."""

    __test__ = False

    def __init__(
        self, *, items: int = 5, screens: int = 8, plain_pages: int = 3, mem_mb: int = 128, slow_s: float = 32.0
    ) -> None:
        self.items = items
        self.slow_s = slow_s
        self.mem_mb = mem_mb
        self.screens = screens
        self.plain_pages = plain_pages
        self.trap_hits: list[tuple[str, int]] = []  # (peer address, time) of every connection to the trap
        self.proxied: list[str] = []  # URLs asked for in absolute form (this web is also an HTTP proxy)
        self.test_headers: list[str] = []  # X-Trawl-Test header of every request (empty string: none)
        self.keys: list[tuple[str, str, str]] = []  # (host, path, X-Key header or "") of every request
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="webtrawl-jsweb-"))

    # --- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> Self:
        sock = bind("127.0.0.1", 0)
        self.port: int = sock.getsockname()[1]
        tls_sock = bind("127.0.0.1", 0)
        self.https_port: int = tls_sock.getsockname()[1]
        self.certs = Certs(self._tmp)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.certs.ca.issue_cert("*.js.test").configure_cert(tls)
        trap = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        trap.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        trap.bind((TRAP_HOST, 0))
        trap.listen(16)
        trap.setblocking(False)
        self.trap_port: int = trap.getsockname()[1]
        self.log = AccessLog(self._tmp / "access.jsonl")
        loop = self._loop = asyncio.new_event_loop()
        self._done: asyncio.Future[None] = loop.create_future()
        started = threading.Event()

        async def serve() -> None:
            runner = web.ServerRunner(web.Server(self._handle, access_log=None), handle_signals=False)
            await runner.setup()
            await web.SockSite(runner, sock).start()
            await web.SockSite(runner, tls_sock, ssl_context=tls).start()
            trap_server = await asyncio.start_server(self._trapped, sock=trap)
            started.set()
            await self._done
            trap_server.close()
            await runner.cleanup()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(serve())
            finally:
                started.set()
                loop.close()

        self._thread = threading.Thread(target=run, name="webtrawl-jsweb", daemon=True)
        self._thread.start()
        started.wait()
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._done.set_result, None)
        self._thread.join()
        self._thread = None
        self.log.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- what a test needs ----------------------------------------------------------------------------------
    def url(self, host: str, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port if scheme == 'http' else self.https_port}{path}"

    def crawl_args(self, ip_allow: str = "127.0.0.0/8") -> list[str]:
        """Confine a crawl to this web: the trap's port is allowed, so only the address policy keeps it out."""
        ports = f"{self.port},{self.https_port},{self.trap_port}"
        args = ["--resolve", "*.test=127.0.0.1", "--ip-allow", ip_allow, "--ports", ports]
        return [*args, "--ca-file", str(self.certs.ca_file)]

    def entries(self, since: int = 0) -> list[LogEntry]:
        return self.log.entries(since)

    def app_urls(self) -> list[str]:
        """Every page of app.js.test (reachable only through links its scripts make)."""
        return [self.url("app.js.test"), *(self.url("app.js.test", f"/item/{k}") for k in range(1, self.items + 1))]

    # --- serving --------------------------------------------------------------------------------------------
    async def _trapped(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        self.trap_hits.append((str(peer[0]) if peer else "", int(time.time())))
        writer.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start_ns = time.time_ns()
        self.log.begin()
        host = host_name(request.host)
        raw_path = request.raw_path
        if raw_path.startswith("http://"):  # a proxy request (absolute form): served as if it came directly
            self.proxied.append(raw_path)
            raw_path = URL(raw_path).raw_path_qs
        self.test_headers.append(request.headers.get("X-Trawl-Test", ""))
        self.keys.append((host, request.path, request.headers.get("X-Key", "")))
        status, body, ctype, last_write_ns = 404, b"not found\n", "text/plain", 0
        try:
            status, body, ctype = self._reply(host, request.path, request.query.get("screen", ""))
            if host.startswith("slow.") and request.path == "/static/slow.js":
                await asyncio.sleep(self.slow_s)
            if host.startswith("hang.") and request.path == "/static/hang.js":
                await self._until_gone(request)  # never answered: the client gives up
            if host.startswith("cookie.") and request.path == "/check":
                title = "cookie: " + (request.cookies.get("visit") or "none")
                status, body, ctype = 200, _plain(title, []), "text/html"
            mime, _, params = ctype.partition(";")
            charset = params.partition("charset=")[2].strip() or "utf-8"
            resp = web.Response(status=status, body=body, content_type=mime, charset=charset)
            if status in (301, 302):  # a redirect's body is its Location
                resp.headers["Location"] = body.decode()
            if host.startswith("cookie.") and request.path == "/":
                resp.set_cookie("visit", "yes")
            last_write_ns = time.time_ns()  # before the answer's one write (head and body): see accesslog.py
            with contextlib.suppress(ConnectionResetError):  # the client went away (gave up on a hung answer)
                await resp.prepare(request)
                await resp.write_eof()
            return resp
        finally:
            self.log.end(
                request_entry(
                    request,
                    host=host,
                    scheme="https" if request.secure else "http",
                    port=self.https_port if request.secure else self.port,
                    start_ns=start_ns,
                    last_write_ns=last_write_ns,
                    status=status,
                    sent=len(body),
                    path=raw_path,
                )
            )

    async def _until_gone(self, request: web.BaseRequest) -> None:
        """Wait until the client closes the connection (or the web stops); aiohttp does not cancel a handler then."""
        while not self._done.done() and request.transport is not None and not request.transport.is_closing():
            await asyncio.sleep(0.05)

    def _reply(self, host: str, path: str, screen: str) -> tuple[int, bytes, str]:
        html, js, data = "text/html", "application/javascript", "application/json"
        if path == "/robots.txt":
            return 200, ROBOTS, "text/plain"
        if path.startswith("/private/"):
            return 200, b"secret\n", "text/plain"
        kind = host.split(".", 1)[0].rstrip("0123456789") if host.endswith(".js.test") else ""
        if kind == "app":
            if path == "/static/app.js":
                return 200, _APP_JS.encode(), js
            if path.startswith("/api/page/"):
                return self._app_data(path.removeprefix("/api/page"))
            if path == "/" or self._item(path):
                return 200, _SHELL.encode(), html
        elif kind == "plain":
            pages = [f"/p/{k}" for k in range(1, self.plain_pages + 1)]
            if path == "/" or path in pages:
                return 200, _plain(f"Plain {path}", pages if path == "/" else ["/"]), html
        elif kind == "scroll":
            if path == "/":
                return 200, _SCROLL_PAGE.encode(), html
            if path == "/static/scroll.js":
                return 200, (_SCROLL_JS % {"screens": self.screens}).encode(), js
            if path == "/api/feed" and screen.isdigit() and int(screen) < self.screens:
                links = [f"/post/{screen}-{i}" for i in range(2)]
                return 200, json.dumps({"links": links}).encode(), data
            if path.startswith("/post/"):
                return 200, _plain(f"Post {path}", []), html
        elif kind == "evil":
            if path == "/":
                page = _EVIL_PAGE % {"port": self.port, "trap": TRAP_HOST, "trap_port": self.trap_port}
                return 200, page.encode(), html
            if path == "/api/ok":
                return 200, b"all fine here", "text/plain"
            if path == "/done":
                return 200, _plain("Done", []), html
        elif kind == "shop":
            if path in ("/", "/more"):
                listed = _plain(f"Shop {path}", ["/more"] if path == "/" else [])
                return 200, listed.replace(b"</body>", _SHOP_LIST), html
            if path == "/static/shop.js":
                return 200, _SHOP_JS.encode(), js
            if path == "/api/products":
                return 200, json.dumps(PRODUCTS).encode(), data
        elif kind == "mem" and path == "/":
            return 200, (_MEM_PAGE % {"chunks": self.mem_mb}).encode(), html  # 2^17 doubles: 1 MiB a chunk
        elif kind == "cookie" and path == "/":
            return 200, _plain("Cookie home", ["/check"]), html
        elif kind == "sjis":
            if path == "/":
                return 200, _SJIS_PAGE.encode("shift_jis"), html + "; charset=shift_jis"
            return 200, _plain(f"Sjis {path}", []), html
        elif kind == "nav":
            return 200, _NAV_PAGE.encode() if path == "/" else _plain(f"Nav {path}", []), html
        elif kind == "redir":
            redirects = {"/static/old.js": "/static/new.js", "/api/away": f"http://{TRAP_HOST}:{self.trap_port}/"}
            if path in redirects:
                return 302, redirects[path].encode(), "text/plain"
            if path == "/static/new.js":
                return 200, _NEW_JS.encode(), js
            return 200, _REDIR_PAGE.encode() if path == "/" else _plain(f"Redir {path}", []), html
        elif kind == "hang":
            return 200, _HANG_PAGE.encode() if path == "/" else _plain(f"Hang {path}", []), html
        elif kind == "post":
            return 200, _POST_PAGE.encode() if path == "/" else _plain(f"Post {path}", []), html
        elif kind == "slow":
            if path == "/static/slow.js":
                return 200, b"document.title = 'Slow done';", js
            return 200, _plain("Slow", []).replace(b"</body>", b'<script src="/static/slow.js"></script></body>'), html
        elif kind == "other" and path == "/static/lib.js":
            return 200, b"window.lib = 1;\n", js
        return 404, b"not found\n", "text/plain"

    def _item(self, path: str) -> int:
        tail = path.removeprefix("/item/")
        return int(tail) if path.startswith("/item/") and tail.isdigit() and 1 <= int(tail) <= self.items else 0

    def _app_data(self, path: str) -> tuple[int, bytes, str]:
        if path == "/":
            title, links = "App home", [f"/item/{k}" for k in range(1, self.items + 1)]
        elif k := self._item(path):
            title, links = f"Item {k}", ["/"] + ([self.url("plain.js.test")] if k == 1 else [])
        else:
            return 404, b"{}", "application/json"
        text = f"{title}: " + " ".join(f"built by script {i}" for i in range(30))
        return 200, json.dumps({"title": title, "text": text, "links": links}).encode(), "application/json"
