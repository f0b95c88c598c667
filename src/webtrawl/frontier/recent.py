"""A per-process memory of URLs this process already saw go into the Bloom filter.

Most links on a page are site-wide navigation that every page of the site repeats. Once Redis said such a URL is
added or seen, asking again can only answer "seen", so :meth:`FrontierCore.add` answers it locally and only counts
it. Keys are Python's 64-bit string hashes (a collision needs ~2^32 entries), evicted first-in first-out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class RecentUrls:
    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, capacity)
        self.keys: set[int] = set()  # hash(url) of each URL known; AddBatch tests ``hash(url) in keys`` itself
        self._order: deque[int] = deque()

    def __contains__(self, url: str) -> bool:
        return hash(url) in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    def remember(self, url: str) -> None:
        if not self.capacity:
            return
        key = hash(url)
        if key in self.keys:
            return
        self.keys.add(key)
        self._order.append(key)
        if len(self._order) > self.capacity:
            self.keys.discard(self._order.popleft())

    def remember_all(self, urls: Iterable[str]) -> None:
        """:meth:`remember` for every URL of an add call, without a method call per URL."""
        if not self.capacity:
            return
        keys, order = self.keys, self._order
        for url in urls:
            key = hash(url)
            if key not in keys:
                keys.add(key)
                order.append(key)
        while len(order) > self.capacity:
            keys.discard(order.popleft())
