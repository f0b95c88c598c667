"""``--proxy URL`` (repeatable): one HTTP(S) proxy per host for the whole crawl, a dead one skipped for a while.

A host always goes through the same proxy (``crc32(host)`` picks it, so every process and every node agrees without
talking), which keeps a site's view of the crawler stable (one exit address, its cookies). A proxy that cannot be
reached is marked dead in this process for ``DEAD_S`` and its hosts move to the next live proxy in the list; when
every proxy is dead the request fails with ``connect`` like any unreachable host.

The address policy still applies to the target: the proxy connects to it, not us, so the client resolves the target
itself and refuses it before anything is sent (``HttpClient.check_target``).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from webtrawl.errors import ConfigError

DEAD_S = 60.0


def check_proxy(url: str) -> str:
    """A proxy URL as given, checked: http:// or https://, a host, no path."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ConfigError(f"--proxy wants http://HOST:PORT (or https://), not {url!r}")
    return url


class ProxyPool:
    def __init__(self, proxies: Iterable[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.proxies = list(proxies)
        self._dead: dict[str, float] = {}  # proxy -> monotonic time it may be tried again
        self._clock = clock

    def __bool__(self) -> bool:
        return bool(self.proxies)

    def candidates(self, host: str) -> list[str]:
        """The proxies to try for ``host``, its own first, then the others in list order; dead ones left out."""
        n = len(self.proxies)
        start = zlib.crc32(host.encode("utf-8", "surrogateescape")) % n
        now = self._clock()
        order = [self.proxies[(start + i) % n] for i in range(n)]
        return [p for p in order if self._dead.get(p, 0.0) <= now]

    def dead(self, proxy: str) -> None:
        self._dead[proxy] = self._clock() + DEAD_S
