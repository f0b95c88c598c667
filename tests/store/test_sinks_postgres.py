"""The PostgreSQL sink against the machine's real server: what the shared SQL tests do not show."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import psycopg
import pytest

from tests.store.sinkdata import ctx, page
from webtrawl.errors import ConfigError
from webtrawl.store.registry import open_sink, probe


def _long_url(n: int) -> str:
    return "http://a.test/?q=" + os.urandom(n // 2).hex()  # random: a B-tree entry cannot compress it


def test_urls_too_long_for_a_btree_entry_keep_one_row_per_key(pg_url: str) -> None:
    """A B-tree entry holds ~2.7 KB: a table keyed on the whole URL refused every URL longer than that
    (``--max-url-length`` raised), and the crawl waited for it forever ("output unavailable")."""
    urls = [_long_url(3000), _long_url(20_000)]
    items = open_sink(pg_url + "?table=t", "items", ctx(Path("/nonexistent")))
    pages = open_sink(pg_url + "?table=p", "records", ctx(Path("/nonexistent")))
    for n in (3, 2):  # the same pages again (a resume, a recrawl) with fewer items: their new set, once
        batch = [page(url, [{"n": n, "i": i} for i in range(n)]) for url in urls]
        items.write(batch)
        pages.write(batch)
    items.close()
    pages.close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT url, idx, n, _url_sha256 FROM t ORDER BY length(url), idx").fetchall()
        records = conn.execute("SELECT url FROM p ORDER BY length(url)").fetchall()
    assert [(url, idx, n) for url, idx, n, _ in rows] == [(u, i, 2) for u in urls for i in range(2)]
    assert all(bytes(digest) == hashlib.sha256(url.encode()).digest() for url, _, _, digest in rows)
    assert records == [(url,) for url in urls]


def test_a_table_made_by_an_older_webtrawl_keeps_its_key_on_the_url(pg_url: str) -> None:
    """Tables made before the key was ``_url_sha256`` are written as before: one set of rows per URL."""
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "CREATE TABLE old (crawl text NOT NULL, url text NOT NULL, idx bigint NOT NULL, _extra jsonb,"
            " fetch_time text, n bigint, PRIMARY KEY (crawl, url, idx))"
        )
    sink = open_sink(pg_url + "?table=old", "items", ctx(Path("/nonexistent")))
    for n in (3, 2):
        sink.write([page("http://a.test/1", [{"n": n, "new": "x"} for _ in range(n)])])
    sink.close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT url, idx, n, new FROM old ORDER BY idx").fetchall()
        columns = [r[0] for r in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = 'old'::regclass")]
    assert rows == [("http://a.test/1", 0, 2, "x"), ("http://a.test/1", 1, 2, "x")]
    assert "_url_sha256" not in columns


def test_a_users_table_with_the_key_columns_but_another_key_is_refused_at_start(pg_url: str) -> None:
    """It passed the check of the key columns, then every write failed (no constraint for its upsert) and the
    parsers died on it until the node stopped."""
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE TABLE mine (crawl text NOT NULL, url text NOT NULL, idx bigint NOT NULL, note text)")
    with pytest.raises(ConfigError) as info:
        probe(pg_url + "?table=mine", "items")
    assert str(info.value).endswith(
        "table mine has no primary key on (crawl, url, idx), so it is not a webtrawl "
        "items table (name another with ?table=NAME)"
    )
