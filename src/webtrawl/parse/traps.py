"""Spider-trap guards on canonical URLs, applied to every link before it reaches the frontier.

Two shapes of endless URL spaces get a drop reason of their own (the per-host budget and the depth limit catch
the rest, e.g. an endless calendar):

* ``trap-repeat``: a path with one segment ``max_path_repeats`` times (``/a/a/a/``, ``/x/y/x/y/x/``): relative
  links on a page served at any path (a soft 404 that links ``a/``) grow the path forever.
* ``trap-query``: more than ``max_query_variants`` distinct query strings for one host and path (session ids,
  endless ``?page=`` or filter combinations).

The query counter is process-local and approximate on purpose: it lives in the parser, which sees the URL
before it costs a Redis round trip, needs no Lua change and no Redis memory, and is exact within one parser
process. With M parsers a path can get up to M times the cap per run (and the count starts over on a restart,
or for a path pushed out of the LRU of ``max_paths`` entries), which still bounds a trap; the frontier's per-host
budget stays the exact backstop.
"""

from __future__ import annotations

from collections import Counter, OrderedDict


class TrapGuard:
    def __init__(self, max_path_repeats: int, max_query_variants: int, *, max_paths: int = 4096) -> None:
        self.max_path_repeats = max_path_repeats
        self.max_query_variants = max_query_variants
        self._max_paths = max_paths
        self._variants: OrderedDict[str, set[int]] = OrderedDict()

    def check(self, url: str) -> str | None:
        """The drop reason for canonical ``url`` (``trap-repeat`` / ``trap-query``), or None.

        A URL that passes is counted as one more variant of its path, so call this last, after the other checks.
        """
        slash = url.find("/", url.find("//") + 2)
        if slash < 0:
            return None
        path, q, query = url[slash:].partition("?")
        if self.max_path_repeats and _repeats(path, self.max_path_repeats):
            return "trap-repeat"
        if q and self.max_query_variants:
            key = url[: slash + len(path)]
            seen = self._variants.get(key)
            if seen is None:
                seen = self._variants[key] = set()
                if len(self._variants) > self._max_paths:
                    self._variants.popitem(last=False)
            else:
                self._variants.move_to_end(key)
            h = hash(query)
            if h not in seen:
                if len(seen) >= self.max_query_variants:
                    return "trap-query"
                seen.add(h)
        return None


def _repeats(path: str, limit: int) -> bool:
    """Whether one non-empty segment of ``path`` occurs ``limit`` times or more."""
    if path.count("/") < limit:
        return False
    parts = path.split("/")
    distinct = set(parts)
    distinct.discard("")
    # not enough duplicates for any segment to reach the limit (counted without a Python loop: runs per link);
    # no segment at all ("/", "//"): nothing repeats, whatever the limit (a limit of 1 used to raise here)
    if not distinct or len(parts) - parts.count("") - len(distinct) < limit - 1:
        return False
    return Counter(s for s in parts if s).most_common(1)[0][1] >= limit
