"""``--proxy URL`` (repeatable): one HTTP(S) proxy per host for the whole crawl, a dead one skipped for a while.

A host always goes through the same proxy (``crc32(host)`` picks it, so every process and every node agrees without
talking), which keeps a site's view of the crawler stable (one exit address, its cookies). A proxy that fails
``FAILS_TO_DEAD`` requests in a row (refused, dropped or stalled connections: no answer through it at all) is
marked dead in this process for ``DEAD_S`` and its hosts move to the next live proxy in the list; a refused
connection is tried through the next proxy at once (the host was not contacted). When every proxy is dead the
fetcher says so once (a WARNING line; the node raises the ``proxy`` alert) and requests fail with ``proxy`` (no
host failure: the URL tries again in its turn, and is recorded with that reason when its retries are used up).

The address policy still applies to the target: the proxy connects to it, not us, so the client resolves the target
itself and refuses it before anything is sent (``HttpClient.check_target``). The proxy then resolves the name again
on its own: a name whose DNS answer changes in between (rebinding) is judged on our answer only, so a proxy that can
reach private networks needs its own egress rules (tests/fetch/test_addr_attack.py covers what is checked here).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Iterable, Mapping

from webtrawl.redact import mask_password as mask

log = logging.getLogger("webtrawl.fetch")

DEAD_S = 60.0
FAILS_TO_DEAD = 3
_FOR_THE_PROXY = "proxy-authorization"  # a --proxy URL's user:password, which aiohttp adds to a plain-HTTP request


def sent_to_target(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """The request's headers as the target gets them (the WARC request record): the proxy's own credentials are
    for the proxy, which takes them off, so an archive never holds them."""
    return [(str(k), str(v)) for k, v in headers.items() if k.lower() != _FOR_THE_PROXY]


class ProxyPool:
    def __init__(self, proxies: Iterable[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.proxies = list(proxies)
        self._dead: dict[str, float] = {}  # proxy -> monotonic time it may be tried again
        self._fails: dict[str, int] = {}  # proxy -> requests in a row that got no answer through it
        self._clock = clock
        self.none_live = False  # every proxy was dead at the last try (and none has answered since)
        self.on_none_live: Callable[[bool], None] | None = None  # told when none_live changes

    def __bool__(self) -> bool:
        return bool(self.proxies)

    def candidates(self, host: str) -> list[str]:
        """The proxies to try for ``host``, its own first, then the others in list order; dead ones left out."""
        n = len(self.proxies)
        start = zlib.crc32(host.encode("utf-8", "surrogateescape")) % n
        now = self._clock()
        order = [self.proxies[(start + i) % n] for i in range(n)]
        live = [p for p in order if self._dead.get(p, 0.0) <= now]
        if not live:
            self._none_live(True)
        return live

    def failed(self, proxy: str) -> None:
        """No answer came through ``proxy`` (refused, dropped, stalled)."""
        fails = self._fails[proxy] = self._fails.get(proxy, 0) + 1
        if fails >= FAILS_TO_DEAD:
            self.dead(proxy)

    def answered(self, proxy: str) -> None:
        self._fails.pop(proxy, None)
        self._none_live(False)

    def dead(self, proxy: str) -> None:
        if self._dead.get(proxy, 0.0) <= self._clock():
            log.warning("proxy %s failed %d requests in a row: skipped for %.0fs", mask(proxy), FAILS_TO_DEAD, DEAD_S)
        self._dead[proxy] = self._clock() + DEAD_S
        self._fails.pop(proxy, None)

    def _none_live(self, state: bool) -> None:
        if state == self.none_live:
            return
        self.none_live = state
        if state:
            log.warning("no live proxy: every --proxy failed; requests fail with 'proxy' until one answers again")
        else:
            log.info("a proxy answers again")
        if self.on_none_live is not None:
            self.on_none_live(state)
