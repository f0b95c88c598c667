"""The arguments of add.lua for a batch of new URLs, and the decoding of its reply.

Redis's CPU per added URL is what bounds the adds/s of one Redis, so the call is shaped to cost Redis little:
URLs are grouped by host in runs (consecutive URLs of one host with the same origin and metadata, in the caller's
order) that each travel as one argument (every argument costs the client, the protocol and the script's ARGV
table), with the two 32-bit hashes of each URL for the Bloom filter (hashlib here costs ~0.5 us per URL and saves
Redis ~13% of its instructions per added URL: sha1hex and the hex parsing in Lua); on a plain Redis the shards of a
batch go in one script call instead of one call per shard (a cluster needs one call per slot). See
scripts/add.lua for the argument layout; benchmarks/bench_frontier.py measures it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from webtrawl.frontier.base import AddResult
from webtrawl.frontier.keys import encode_meta, split_parts, text
from webtrawl.frontier.recent import RecentUrls
from webtrawl.frontier.scripts import Arg
from webtrawl.messages import NewUrl
from webtrawl.names import BUDGET, DROP_PREFIX, FRONTIER_CAP, HOST_QUEUE_CAP

_sha1 = hashlib.sha1
_FATES = {"c": HOST_QUEUE_CAP, "b": BUDGET}  # add.lua's letters for a refused URL
MAX_URLS_PER_CALL = 500  # a larger batch is cut (at segment ends): one script run blocks Redis for ~5 ms at most


class _Run:
    """Consecutive URLs of one host with the same origin and metadata."""

    __slots__ = ("host", "meta", "origin", "urls")

    def __init__(self, host: str, origin: str, meta: str) -> None:
        self.host, self.origin, self.meta = host, origin, meta
        self.urls: list[str] = []  # each is origin + its rest (path and query)


class Segment:
    """What one add call carries for one shard: its runs and the counters of URLs answered without Redis."""

    __slots__ = ("extras", "runs", "shard", "size")

    def __init__(self, shard: int) -> None:
        self.shard = shard
        self.runs: list[_Run] = []
        self.extras: dict[str, int] = defaultdict(int)
        self.size = 0

    def args(self, sp: str) -> list[Arg]:
        out: list[Arg] = [sp, len(self.extras)]
        for name, n in self.extras.items():
            out += (name, n)
        out.append(0)  # the number of runs, set below
        count = 0
        for run in self.runs:
            packed = _packed(run)
            if packed is not None:
                out.append(packed)
                count += 1
            else:  # text with a newline of its own (never a canonical URL): one explicit run per URL
                cut = len(run.origin)
                for url in run.urls:
                    out += ("", run.host, run.origin, run.meta, url[cut:])
                count += len(run.urls)
        out[2 + 2 * len(self.extras)] = count
        return out

    def urls(self) -> list[str]:
        if len(self.runs) == 1:
            return self.runs[0].urls
        return [url for run in self.runs for url in run.urls]


def _packed(run: _Run) -> bytes | None:
    """The run as add.lua's one argument: a header line each for host, origin and metadata, then a line per URL:
    its SHA-1 (the Bloom filter's hashes, cheaper here than in Lua) and its path.

    None if some text has a newline of its own.
    """
    head = f"{run.host}\n{run.origin}\n{run.meta}\n"
    if head.count("\n") != 3 or "\n" in "".join(run.urls):  # the origins have none: a newline is in a rest
        return None
    # each URL is origin + rest: its rest is the tail of the bytes already encoded for its hash (one encode a URL)
    cut = len(run.origin.encode())
    lines = [_sha1(raw := url.encode()).digest() + raw[cut:] for url in run.urls]
    return head.encode() + b"\n".join(lines)


class AddBatch:
    """Sorts a batch of new URLs into shard segments; URLs refused before Redis are counted in ``result``."""

    def __init__(
        self,
        shard_of: Callable[[str], int],
        recent: RecentUrls,
        allowed: int,
        key_of: Callable[[str], str] | None = None,
    ) -> None:
        self.segments: dict[int, Segment] = {}
        self.result = AddResult()
        self.dropped: dict[str, int] = defaultdict(int)
        self._shard_of = shard_of
        self._recent = recent
        self._allowed = allowed
        self._key_of = key_of  # host -> queue key (its registered domain with --politeness-key domain)

    def _segment(self, shard: int) -> Segment:
        seg = self.segments.get(shard)
        if seg is None:
            seg = self.segments[shard] = Segment(shard)
        return seg

    def extend(self, urls: Sequence[NewUrl]) -> None:
        origins: dict[str, tuple[str, Segment]] = {}  # url up to its path -> (host, segment): split each origin once
        runs: dict[str, _Run] = {}  # host -> its latest run
        result = self.result
        recent = self._recent.keys  # RecentUrls.__contains__ inlined: a method call per URL shows here
        for item in urls:
            url = item.url
            end = url.find("/", 8)  # the path's "/" of an http(s) URL
            if end > 0 and (known := origins.get(origin := url[:end])) is not None:
                host, seg = known
            else:
                parts = split_parts(url)
                if parts is None:
                    self._refuse(self._segment(0), url, "bad-url")
                    continue
                host, origin, _ = parts
                if self._key_of is not None:
                    host = self._key_of(host)
                seg = self._segment(self._shard_of(host))
                if end > 0 and origin == url[:end]:
                    origins[origin] = (host, seg)
            if hash(url) in recent:
                seg.extras["seen"] += 1
                result.seen += 1
                continue
            if self._allowed <= 0:
                self._refuse(seg, url, FRONTIER_CAP)
                continue
            self._allowed -= 1
            meta = (
                encode_meta(item.depth, item.hops, 0, item.priority, item.route)
                if item.hops or item.priority >= 0 or item.route
                else str(item.depth)
            )
            run = runs.get(host)
            if run is None or run.origin != origin or run.meta != meta:
                run = runs[host] = _Run(host, origin, meta)
                seg.runs.append(run)
            run.urls.append(url)
            seg.size += 1

    def _refuse(self, seg: Segment, url: str, reason: str) -> None:
        seg.extras[DROP_PREFIX + reason] += 1
        self.dropped[reason] += 1
        self.result.refused.append((url, reason))

    def calls(self, one_slot: bool) -> list[list[Segment]]:
        """The segments of each script call: one per call on a cluster, else as many as fit in a call."""
        ordered = [self.segments[shard] for shard in sorted(self.segments)]
        if one_slot:
            return [[seg] for seg in ordered]
        out: list[list[Segment]] = []
        size = 0
        for seg in ordered:
            if not out or size + seg.size > MAX_URLS_PER_CALL:
                out.append([])
                size = 0
            out[-1].append(seg)
            size += seg.size
        return out

    def replies(self, segments: list[Segment], reply: Sequence[Any]) -> list[tuple[int, int]]:
        """Count one call's reply into ``result``; returns (shard, server ms until it has a ready host) hints."""
        now, added, seen, dcap, dbudget, nready = (int(x) for x in reply[:6])
        result = self.result
        result.added += added
        result.seen += seen
        self.dropped[HOST_QUEUE_CAP] += dcap
        self.dropped[BUDGET] += dbudget
        hints = [
            (segments[int(reply[i]) - 1].shard, max(0, int(reply[i + 1]) - now)) for i in range(6, 6 + 2 * nready, 2)
        ]
        urls = segments[0].urls() if len(segments) == 1 else [url for seg in segments for url in seg.urls()]
        first = 6 + 2 * nready
        if first == len(reply):  # nothing refused: every URL is in the Bloom filter now
            self._recent.remember_all(urls)
            return hints
        refused = {int(reply[i]) - 1: text(reply[i + 1]) for i in range(first, len(reply), 2)}
        self._recent.remember_all(url for i, url in enumerate(urls) if i not in refused)
        for i, fate in sorted(refused.items()):
            result.refused.append((urls[i], _FATES.get(fate, fate)))
        return hints
