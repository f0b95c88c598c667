"""The crawl's cookie jar in Redis (--cookies): one hash per registered domain (:func:`keys.cookies_key`), read
when a fetcher leases a host of it and written when a response changed it. The frontier keeps the fields as opaque
bytes; what they hold and how they reach a fetcher's aiohttp jar is :mod:`webtrawl.fetch.cookies`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webtrawl.frontier.keys import cookies_key
from webtrawl.frontier.scripts import Call, Steps

Fields = dict[bytes, bytes]
Changes = Mapping[str, Mapping[bytes, bytes | None]]  # domain -> field -> new value, None: deleted


def _fields(reply: Any) -> Fields:
    if isinstance(reply, dict):
        return {_raw(k): _raw(v) for k, v in reply.items()}
    return {_raw(reply[i]): _raw(reply[i + 1]) for i in range(0, len(reply) - 1, 2)}


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


def load_cookies(prefix: str, shards: int, domains: Sequence[str]) -> Steps[list[Fields]]:
    """The stored cookies of each of ``domains``: one pipeline of HGETALL (on a cluster, one per master)."""
    if not domains:
        return []
    replies = yield [Call(("HGETALL", cookies_key(prefix, shards, domain))) for domain in domains]
    return [_fields(reply) for reply in replies]


def save_cookies(prefix: str, shards: int, changes: Changes) -> Steps[None]:
    """Write the cookies a response set or deleted, field by field: two fetchers that change different cookies of
    one domain at once both keep theirs."""
    calls = []
    for domain, fields in changes.items():
        key = cookies_key(prefix, shards, domain)
        sets = [part for field, value in fields.items() if value is not None for part in (field, value)]
        gone = [field for field, value in fields.items() if value is None]
        if sets:
            calls.append(Call(("HSET", key, *sets)))
        if gone:
            calls.append(Call(("HDEL", key, *gone)))
    if calls:
        yield calls
