"""Numbers each fetcher shares with its node's supervisor, in shared memory: one writer per slot, so no lock."""

from __future__ import annotations

import ctypes
import multiprocessing.sharedctypes

SLOTS = 4  # per fetcher: pages fetched, leases held now (or about to arrive), URLs ended for good, no live proxy
FETCHED, LEASES, ENDED, NO_PROXY = range(SLOTS)


class FetcherStats:
    """Slot ``SLOTS*i + k`` belongs to fetcher ``i``. ENDED counts what ``--max-pages`` counts: URLs the fetcher
    finished with a fetch or with an error recorded without one. Handed to fetchers as :attr:`array`."""

    def __init__(self, fetchers: int) -> None:
        self.array = multiprocessing.sharedctypes.RawArray(ctypes.c_int64, SLOTS * max(1, fetchers))  # any start method

    def _sum(self, slot: int) -> int:
        return sum(self.array[slot::SLOTS])

    def fetched(self) -> int:
        return self._sum(FETCHED)

    def leases(self) -> int:
        return self._sum(LEASES)

    def ended(self) -> int:
        return self._sum(ENDED)

    def without_proxy(self) -> int:
        """Fetchers whose every --proxy is dead now."""
        return self._sum(NO_PROXY)
