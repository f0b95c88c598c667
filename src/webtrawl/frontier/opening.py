"""Opening a crawl's frontier: its meta created on first use, or loaded (an existing crawl's layout wins)."""

from __future__ import annotations

import time

from webtrawl.errors import StateError
from webtrawl.formats.recrawl import stamp
from webtrawl.frontier.bloom import blocked_chain, chain_spec
from webtrawl.frontier.commands import FrontierCore, pairs
from webtrawl.frontier.keys import SHARD_MARK, SHARD_MARKS, meta_key
from webtrawl.frontier.scripts import Arg, Call, Steps, script_call
from webtrawl.frontier.settings import FrontierSettings

_PREALLOC_BYTES = 1 << 20  # above this Redis grows strings by 1 MiB steps, not by doubling


class CoreView:
    """What both frontiers (sync and asyncio) answer from their core alone, without a Redis call."""

    core: FrontierCore

    @property
    def shards(self) -> int:
        return self.core.shards

    def meta(self) -> dict[str, str | int]:
        return dict(self.core.meta)

    @property
    def politeness_key(self) -> str:
        return self.core.politeness_key

    def shard_of(self, host: str) -> int:
        return self.core.shard(host)

    def next_lease_in(self) -> float:
        """Seconds until lease() has a shard worth asking; sleep this long after an empty lease()."""
        return self.core.next_lease_in()


def open_core(settings: FrontierSettings, create: bool = True, one_slot: bool = True) -> Steps[FrontierCore]:
    """Create the crawl's meta or load it; an existing crawl's shards and Bloom size win over ``settings``.

    With ``create=False`` (readers such as ``trawl stats``) a missing crawl is a :class:`StateError`.
    ``one_slot``: every script call must stay in one cluster slot (Redis Cluster); on a plain Redis (False) one add
    call carries the URLs of many shards.
    """
    if not create:
        (exists,) = yield [Call(("EXISTS", meta_key(settings.prefix)))]
        if not int(exists):
            raise StateError(f"no crawl with key prefix {settings.prefix!r} in this Redis")
    chain = blocked_chain(settings.expected_urls, settings.bloom_error, settings.shards)
    fresh: dict[str, Arg] = {
        "version": 1,
        "shards": settings.shards,
        "bloom_m": chain[0].bits,  # the first filter of each shard's chain (the only one of an older crawl)
        "bloom_k": chain[0].hashes,
        "bloom_chain": chain_spec(chain),
        "bloom_scheme": "b",  # blocked filters (bloom.py); absent: a crawl from before them
        "expected_urls": settings.expected_urls,
        "bloom_error": repr(settings.bloom_error),
        "canon_version": settings.canon_version,
        "politeness_key": settings.politeness_key,
        "stamp": stamp(time.time()),  # in the crawl's WARC file names (store/base.py, SinkContext.warc_prefix)
    }
    args: list[Arg] = []
    for name, value in fresh.items():
        args += [name, value]
    (reply,) = yield [script_call("init", meta_key(settings.prefix), *args)]
    core = FrontierCore(settings, pairs(reply[1:]), one_slot)
    if int(reply[0]) and core.bloom_m // 8 <= _PREALLOC_BYTES:
        # an exact-size bitmap: grown bit by bit, Redis would allocate up to twice its length
        zeros = bytes(core.bloom_m // 8)
        yield [Call(("SET", sp + "bloom", zeros, "NX")) for sp in core._sp]
    # a new crawl (or one from before the marks): each shard's mark first, then the meta's field that says so
    if create and SHARD_MARKS not in core.meta:
        yield [Call(("SET", sp + SHARD_MARK, 1)) for sp in core._sp]
        yield [Call(("HSET", meta_key(settings.prefix), SHARD_MARKS, 1))]
        core.meta[SHARD_MARKS] = 1
    return core
