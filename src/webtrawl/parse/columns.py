"""The crawl-wide agreement on column types (:class:`webtrawl.store.base.ColumnTypes`) in the crawl's Redis: every
node's parsers write Parquet files that are read together, so a field typed by the first writer that met it has that
type in all of them. One hash per scope (``parquet:items``...), first writer wins (HSETNX), then read back."""

from __future__ import annotations

from typing import Any

from webtrawl.frontier.keys import global_tag


class RedisColumnTypes:
    def __init__(self, client: Any, prefix: str) -> None:
        self._client = client
        self._prefix = global_tag(prefix) + "columns:"  # in the slot of the crawl's global keys (keys.py)

    def agree(self, scope: str, wanted: dict[str, str]) -> dict[str, str]:
        key = self._prefix + scope
        names = list(wanted)
        pipe = self._client.pipeline(transaction=False)
        for name in names:
            pipe.hsetnx(key, name, wanted[name])
        pipe.hmget(key, names)
        found = pipe.execute()[-1]
        return {
            name: (value.decode() if isinstance(value, bytes) else value)
            for name, value in zip(names, found, strict=True)
        }
