"""Key layout of the Redis frontier, and the compact encoding of one queued URL.

Every key starts with the crawl's prefix ``P`` (default ``wt``) and carries a Redis Cluster hash tag, so all the keys
one Lua script touches hash to one slot and the same scripts run unchanged on a cluster::

    P:{P:g}:meta            hash   crawl meta: shards, bloom_chain (m,k,capacity;... of each shard's filters),
                                   bloom_m, bloom_k (its first; a crawl without bloom_chain has only it),
                                   bloom_scheme (b: blocked filters; absent: an older crawl's, see bloom.py),
                                   canon_version, created, recrawl_rounds (--recrawl-after: runs that started a
                                   round, node/startup.py), round_stored (``stored`` when the round started),
                                   politeness_key (host, domain or ip; absent: host), stamp (creation time,
                                   YYYYMMDDhhmmssSSS: in WARC file names; absent in a crawl from before it),
                                   marks ("1" once every shard has its SP mark, opening.py)
    P:{P:g}:seeds           set    seed URLs / hosts (the scope check needs them on resume)
    P:{P:g}:columns:<scope> hash   (Parquet outputs) column name digest -> its type, as the first writer of the crawl
                                   gave it (parse/columns.py); scope: parquet:items, parquet:records
    P:{P:g}:start           string a spider's start_requests(): "done", or the node id running it (node/startreqs.py)
    P:ready                 channel (pub/sub, plain Redis only) "SP\nms\n...": the shards an add made hosts ready in
                                   and how long until the earliest is due; fetchers listen (async_frontier.py)

    per virtual shard s = crc32(host) % shards, prefix SP = P:{P:s}:  ("host" below is the queue key: the host
    name, or its registered domain when the crawl's politeness_key is domain)
    SP ready, SP ready<l>   zset   host -> next-allowed time (ms, Redis clock) per priority level l = 1..3 (level
                                   0: plain "ready"); only hosts with queued URLs and no lease, each in the set of
                                   its best non-empty level. Picking work is ZRANGEBYSCORE -inf now on each level,
                                   best first: O(levels x log n)
    SP q:<host>, SP q<l>:<host>  list  FIFO of entries (see below) per priority level (level 0: plain "q:").
                                   A URL's level is its explicit priority if it has one (a rule's or callback's
                                   priority, a low sitemap priority), else its depth capped at PRIORITY_LEVELS - 1
                                   (names.py): seeds and sitemap URLs (depth 0) first, then shallower before deeper
    SP h:<host>             hash   o: origin (scheme://host[:port]), n: next-allowed ms, f: consecutive failures,
                                   a: URLs admitted (budget), l: token of the lease holding the host (if any),
                                   d: the politeness gap of the last answer (a reclaim waits it from now),
                                   q: URLs queued over all its priority levels (absent in crawls from before it:
                                   add.lua then counts them once)
                                   js: "1" once a page of the host needed rendering (--render auto; leases say so)
    SP bloom, SP bloom<i>   string bitmaps of the seen-URL filter of this shard: a chain (frontier/bloom.py), SP bloom
                                   first (written at its size when the crawl is created, the others when the one
                                   before is full, so Redis does not over-allocate them)
    SP bn                   hash   f: the newest filter of the chain, n: the URLs it holds (absent: the first, empty)
    SP wb, SP wr            zset   host -> next-allowed ms of the hosts release.lua backed off (wb) or that wait for
                                   a robots.txt retry (wr); reclaim.lua drops those whose time has passed
    SP mark                 string "1", set when the crawl is opened first: a shard without it (a cluster master
                                   restarted without its data) is a lost shard, not an empty one (upkeep.py)
    SP c                    hash   counters: added, seen, queued, inflight, hosts (distinct hosts admitted),
                                   drop:<reason> (host-queue-cap, budget, frontier-cap, bad-url), reclaimed,
                                   hosts-parked, given-up (parsers), stale-release, stale-complete, recompleted,
                                   lease-repeats, and whatever release/complete add.
                                   Only their sums over all shards mean anything: on a plain Redis one add call
                                   counts the URLs of all its shards in the first shard's hash
    SP L                    hash   lease token -> "<owner> <host> <entry>"
    SP dl                   zset   lease token -> deadline (ms, Redis clock)
    SP seq                  string counter that makes lease tokens unique (never behind the Redis clock in
                                   microseconds: a failover that lost increments gives out no token twice)
    SP pw                   hash   (parsers) parser -> the number of its last completion call
                                   whose watermark check passed (on a plain Redis in shard 0's only): a number behind
                                   the parser's says a failover lost the calls after it (resend.py)
    SP err                  hash   URLs whose retries ran out (complete.lua), for trawl requeue (requeue.lua):
                                   "<host>\n<rest>" -> "<reason>\n<entry with no retries used>"
    SP lr                   hash   lease owner -> "<request id> <token>...": its last lease call that leased
                                   something; that call sent again after its reply was lost gets those leases back
                                   (those still held) instead of new ones. One field per fetcher that leased here
    SP r:<origin>           string robots.txt cache of an origin (TTL; trawl requeue deletes an unavailable one)
    SP a:<address>          hash   (politeness_key ip; shard = crc32(address) % shards) the address's gate:
                                   l: lease token of the request in flight, x: when that lock lapses (ms),
                                   n: next-allowed ms, g: its last gap; expires a minute after its last use
    SP rc                   hash   (--recrawl-after) url -> its recrawl state "<key>\n<depth>\n<origin>\n<rest>\n
                                   <interval ms>\n<etag>\n<last-modified>\n<content hash>\n<fetch time>\n
                                   <simhash>\n<last fetch that answered>" (an older crawl's: to <fetch time>;
                                   <fetch time> as 17 digits when the response's WARC record id is derived from
                                   it, else ISO) (formats/recrawl.py), or, for a sitemap URL not fetched yet
                                   whose sitemap gave a changefreq, the hint "~<first interval ms>" (hint.lua)
    SP due                  zset   (--recrawl-after) url -> when it is due again (ms, epoch); due.lua queues the
                                   due ones at the start of a round
    SP ct                   hash   (--chunks/--changes with --recrawl-after) url -> its content state: msgpack of
                                   fetch time, chunk ids, text/items digests and capped zlib copies (parse/changes.py)
    SP sm                   hash   (--chunks/--changes with --recrawl-after) sitemap URL -> the URLs it listed when
                                   last read, sorted, newline-joined, zlib (parse/unlisted.py); a sitemap lists only
                                   its own host's URLs, so they and their ``ct`` states are on its shard
    SP nd:<band>:<value>    set    (--near-duplicates; shard = crc32("<band>:<value>") % shards) the pages whose
                                   simhash has this 16-bit value in band 0-3: "<simhash as 16 hex digits><url>"
    SP ck:<domain>          hash   (--cookies; shard = crc32(domain) % shards) the crawl's cookie jar for the hosts
                                   of one registered domain: cookie ["<domain>","<path>","<name>"] (JSON) -> its
                                   state as aiohttp saves a jar (JSON: value, attributes, host_only, absolute
                                   expires_timestamp) (fetch/cookies.py); a field goes when the cookie is deleted or
                                   seen expired, the hash with the crawl

Entry (one element of ``q:<host>``): ``<depth>[.<hops>[.<retries>]][~<level>][^<n>:<route>]<rest>`` where
``rest`` is the URL without its origin (``/path?query``) when the URL's origin is the host's usual one (``o``), else
the full URL, and ``~<level>`` is an explicit priority level (only URLs given one carry it: two bytes). The metadata
is digits, dots and ``~`` only and ``rest`` never starts with one of them, so no separator is needed: a typical entry
costs its path plus one byte. A script that rewrites the metadata (retries + 1) keeps ``~<level>`` as the head of
``rest``. Lease tokens are ``<owner>.<shard>-<seq>``: the part before the last ``.`` is the fetcher that took it.

``^<n>:<route>`` is a spider's route (``Lease.route``/``NewUrl.route``: the callback name and the JSON data the link was
followed with, :mod:`webtrawl.extract.routing`), ``n`` its length in UTF-8 bytes; ``rest`` never starts with ``^``. Only
links a spider (or a rule's data) routed carry it, and URLs reached as sitemaps (``@sitemap``, ``@sitemap<level>``,
:mod:`webtrawl.formats.route`, which lets a text sitemap be read as one): every other entry is byte for byte what it
was. The route lives inline in the entry, not in a hash of its own keyed by URL, because the entry already goes
everywhere the URL goes: into the lease record (``L``) and back to the head of the queue on reclaim (expired or by
owner), to the tail on a retry (the scripts treat it as the head of ``rest``, like ``~<level>``), into the recrawl state
(``rc``, after the depth), and it is in the same slot on a cluster and in the AOF like the entry. A hash would need a
write per add, a delete per completion and care in every script, for the same bytes. Its size is capped where it is made
(16 KiB of JSON). Dedup is by URL alone: a URL already seen is not added again, so its route is the one of its first
discovery.
"""

from __future__ import annotations

import re
import zlib
from typing import Any, NamedTuple

from webtrawl.formats.route import frame_route, split_route
from webtrawl.messages import Lease
from webtrawl.names import PRIORITY_LEVELS

_URL_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)(.*)", re.DOTALL)
_ENTRY_RE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:~(\d+))?(.*)", re.DOTALL)


def shard_tag(prefix: str, shard: int) -> str:
    """``P:{P:s}:``: the prefix of every key of one shard."""
    return f"{prefix}:{{{prefix}:{shard}}}:"


def ready_channel(prefix: str) -> str:
    """The pub/sub channel on which add.lua says which shards it made hosts ready in (a hint, not a key: fetchers
    that found nothing to lease ask those shards at once instead of at their next poll)."""
    return f"{prefix}:ready"


def global_tag(prefix: str) -> str:
    return f"{prefix}:{{{prefix}:g}}:"


SHARD_MARK = "mark"  # SP mark: the shard is the crawl's (see above)
SHARD_MARKS = "marks"  # the meta's field: every shard has its mark


def meta_key(prefix: str) -> str:
    return global_tag(prefix) + "meta"


def stop_key(prefix: str) -> str:
    """The crawl's stop generation: ``trawl stop`` (or a spider's CloseSpider) raises it, every node drains."""
    return global_tag(prefix) + "stop"


def seeds_key(prefix: str) -> str:
    return global_tag(prefix) + "seeds"


def shard_of(host: str, shards: int) -> int:
    return zlib.crc32(host.encode()) % shards


class UrlParts(NamedTuple):
    host: str  # politeness key: lower-case host name without port, brackets or userinfo
    origin: str  # scheme://netloc as written in the URL
    rest: str  # everything after the origin: /path?query


def split_url(url: str) -> UrlParts | None:
    """Cut a canonical absolute URL into host, origin and rest; None if it is not absolute."""
    parts = split_parts(url)
    return UrlParts(*parts) if parts is not None else None


def split_parts(url: str) -> tuple[str, str, str] | None:
    """:func:`split_url` as a plain tuple, for the add path (no NamedTuple per link).

    The fast path takes what canonical links look like (``http(s)://host[:port]/...``) without the regex; anything
    else (userinfo, IPv6, no path, other schemes or letter case) goes through the regex.
    """
    if url.startswith("https://"):
        start = 8
    elif url.startswith("http://"):
        start = 7
    else:
        return _split_any(url)
    end = url.find("/", start)
    if end < 0:
        return _split_any(url)
    netloc = url[start:end]
    if "?" in netloc or "#" in netloc or "@" in netloc or "[" in netloc:
        return _split_any(url)
    host = netloc.partition(":")[0]
    if not host:
        return None
    return host.lower(), url[:end], url[end:]


def _split_any(url: str) -> tuple[str, str, str] | None:
    m = _URL_RE.fullmatch(url)
    if m is None:
        return None
    scheme, netloc, rest = m.groups()
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        host = hostport[1 : hostport.find("]")] if "]" in hostport else ""
    else:
        host = hostport.partition(":")[0]
    if not host:
        return None
    return host.lower(), scheme + netloc, rest


def level_of(depth: int, priority: int = -1) -> int:
    """The priority level of a URL at ``depth`` with an explicit ``priority`` level or none (-1); same rule as
    level_of() in the Lua scripts."""
    return min(max(depth if priority < 0 else priority, 0), PRIORITY_LEVELS - 1)


def queue_key(sp: str, host: str, level: int = 0) -> str:
    """The key of one priority level of a host's queue (``sp``: the shard prefix)."""
    return f"{sp}q:{host}" if level == 0 else f"{sp}q{level}:{host}"


def ready_key(sp: str, level: int = 0) -> str:
    return f"{sp}ready" if level == 0 else f"{sp}ready{level}"


def content_key(prefix: str, shard: int) -> str:
    """``P:{P:s}:ct``: the content states (--chunks/--changes) of the URLs of hosts on shard ``s``."""
    return shard_tag(prefix, shard) + "ct"


def sitemap_key(prefix: str, shard: int) -> str:
    """``P:{P:s}:sm``: the URLs each sitemap of a host on shard ``s`` listed when last read (--chunks/--changes)."""
    return shard_tag(prefix, shard) + "sm"


def neardup_key(prefix: str, shards: int, band: int, value: int) -> str:
    """``P:{P:s}:nd:<band>:<value>``: one bucket of the near-duplicate index, on the shard of its own name."""
    name = f"{band}:{value:04x}"
    return shard_tag(prefix, shard_of(name, shards)) + "nd:" + name


def cookies_key(prefix: str, shards: int, domain: str) -> str:
    """``P:{P:s}:ck:<domain>``: the crawl's cookies of one registered domain (--cookies), on the shard of its name."""
    return shard_tag(prefix, shard_of(domain, shards)) + "ck:" + domain


def host_of(url: str) -> str | None:
    parts = split_url(url)
    return parts.host if parts else None


def encode_meta(depth: int, hops: int = 0, retries: int = 0, priority: int = -1, route: str = "") -> str:
    """Same rule as join_meta() in the Lua scripts: trailing zero fields are left out; ``~<level>`` only for a URL
    with an explicit priority level (``priority`` >= 0), ``^<n>:<route>`` only for a URL with a route."""
    if retries:
        meta = f"{depth}.{hops}.{retries}"
    elif hops:
        meta = f"{depth}.{hops}"
    else:
        meta = str(depth)
    if priority >= 0:
        meta = f"{meta}~{level_of(0, priority)}"
    return meta + frame_route(route) if route else meta


class Entry(NamedTuple):
    url: str
    depth: int
    hops: int
    retries: int
    priority: int = -1  # explicit priority level, -1: none (the level follows the depth)
    route: str = ""  # a spider's callback and data (webtrawl.extract.routing), "" for none


def decode_entry(entry: str, origin: str) -> Entry:
    m = _ENTRY_RE.fullmatch(entry)
    if m is None:  # not written by us; keep the URL rather than lose it
        return Entry(entry, 0, 0, 0)
    depth, hops, retries, priority, rest = m.groups()
    route, rest = split_route(rest)
    url = rest if rest[:1].isalpha() else origin + rest  # a relative rest starts with / ? or is empty
    return Entry(url, int(depth), int(hops or 0), int(retries or 0), int(priority) if priority else -1, route)


def text(value: Any) -> str:
    """A Redis reply as text (a key, an entry, an origin): bytes that are not UTF-8 kept as surrogates."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def lease_of(token: str, shard: int, host: str, entry: Entry, render: bool = False) -> Lease:
    """The lease of a queue entry a script leased (lease.lua, release.lua's held one, giveup.lua)."""
    return Lease(token, shard, host, entry.url, entry.depth, entry.hops, entry.retries, render, entry.route)
