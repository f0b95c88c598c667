"""--cookies in a render: the crawl's jar and the page's browser context hold the same cookies of the page's host.

A render's context is fresh, so without this a page's scripts would not see the crawl's cookies in
``document.cookie``, and what they set there (a consent flag, an A/B id, an anti-bot token) would be lost with the
context. :func:`put` hands the jar's cookies of the page's host to the context before the page loads;
:func:`take` brings the ones the context holds for the page's host and the jar does not (new, or another value) into
the jar, by aiohttp's rules for what a response from the page's URL may set (so a page sets nothing for an unrelated
domain). The jar is what the page's requests are sent with (page.py), and pending writes go to Redis as a
Set-Cookie's do (:meth:`~webtrawl.fetch.cookies.SharedCookies.written`).
"""

from __future__ import annotations

import contextlib
from http.cookies import Morsel
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext
from playwright.async_api import Error as PlaywrightError
from yarl import URL

from webtrawl.domains import in_domains

if TYPE_CHECKING:
    from playwright._impl._api_structures import SetCookieParam

    from webtrawl.fetch.cookies import CrawlJar

_SAME_SITE: dict[str, Literal["Lax", "None", "Strict"]] = {"lax": "Lax", "strict": "Strict", "none": "None"}


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def browser_cookies(jar: CrawlJar, url: str) -> list[SetCookieParam]:
    """The jar's cookies a request to ``url``'s host may be sent, as Playwright sets them: a host-only cookie has its
    host as domain, a domain cookie the domain with a leading dot (Chromium's tell between the two)."""
    cookies: list[SetCookieParam] = []
    for domain, path, morsel, host_only, expiry in jar.held_for(_host(url)):
        cookie: SetCookieParam = {
            "name": morsel.key,
            "value": morsel.coded_value,  # as the server set it: the bytes the jar sends (wire.RawCookieJar)
            "domain": domain if host_only else "." + domain,
            "path": morsel["path"] or path or "/",
            "secure": bool(morsel["secure"]),
            "httpOnly": bool(morsel["httponly"]),
        }
        if expiry is not None:
            cookie["expires"] = expiry
        same_site = _SAME_SITE.get(str(morsel["samesite"]).lower())
        if same_site and (same_site != "None" or cookie["secure"]):  # Chromium refuses SameSite=None unless Secure
            cookie["sameSite"] = same_site
        cookies.append(cookie)
    return cookies


async def put(context: BrowserContext, jar: CrawlJar, url: str) -> None:
    """The jar's cookies of ``url``'s host into the context, before the page loads. One Chromium refuses (a value
    with a byte it does not take) is left out, not the others with it."""
    cookies = browser_cookies(jar, url)
    if not cookies:
        return
    try:
        await context.add_cookies(cookies)
    except PlaywrightError:
        for cookie in cookies:
            with contextlib.suppress(PlaywrightError):
                await context.add_cookies([cookie])


async def take(context: BrowserContext, jar: CrawlJar, url: str) -> None:
    """The context's cookies of ``url``'s host that the jar does not hold as they are into the jar (pending for
    Redis). A cookie the context holds for another host (a page's allowed other host) is left out."""
    host = _host(url)
    new: list[tuple[Morsel[str], float | None]] = []
    for cookie in await context.cookies():
        name, value, domain = cookie.get("name", ""), cookie.get("value", ""), cookie.get("domain", "")
        path = cookie.get("path") or "/"
        host_only = not domain.startswith(".")
        bare = domain.lstrip(".").lower()
        if not name or (bare != host if host_only else not in_domains(host, (bare,))):
            continue
        if jar.value_of(bare, path.rstrip("/"), name) == value:
            continue
        morsel: Morsel[str] = Morsel()
        # __setstate__ as the jar does (wire.RawCookieJar): Morsel.set() refuses bytes a browser takes
        morsel.__setstate__({"key": name, "value": value, "coded_value": value})  # type: ignore[attr-defined]
        morsel["path"] = path
        if not host_only:
            morsel["domain"] = domain
        if cookie.get("secure"):
            morsel["secure"] = True
        if cookie.get("httpOnly"):
            morsel["httponly"] = True
        if same_site := cookie.get("sameSite"):
            morsel["samesite"] = same_site
        expires = cookie.get("expires", -1)
        new.append((morsel, float(expires) if expires is not None and expires > 0 else None))
    if new:
        jar.set_from(URL(url), new)
