"""End to end: ``--chunks`` and ``--changes`` over recrawl rounds of a site the test edits between them, and
chunks after a kill -9 of the whole node and a resume."""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.node.crawlrun import Crawl, polite_crawl, records, stats, taken_back, wait_until
from webtrawl.extract.chunks import chunk_markdown
from webtrawl_testweb import TestWeb
from webtrawl_testweb.watch import LISTED

pytestmark = pytest.mark.usefixtures("fresh_watch_site")  # its tests edit the shared watch site

DELAY = 0.05
RULES = """
[[rule]]
url = 'product\\.html'
follow = false
[rule.fields]
name = "css:h2::text"
price = { css = "p.price::text", type = "float" }
"""


def _round(web: TestWeb, out: Path, *args: str, resumed: bool) -> None:
    polite_crawl(web, out, *args, "--recrawl-after", "0.001", delay=DELAY, resumed=resumed)


def _new_rows(out: Path, stream: str, before: int) -> list[dict[str, Any]]:
    return records(out, stream)[before:]


def test_chunks_and_changes_across_recrawl_rounds(testweb: TestWeb, tmp_path: Path) -> None:
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    hooked = tmp_path / "hooked.jsonl"
    copies = tmp_path / "copies"
    args = ("--chunks", "300", "--changes", "--extract", str(rules), "--on-change", f"cat >> {hooked}")
    args += ("--chunks-to", f"jsonl:{copies / 'chunks'}", "--changes-to", f"jsonl:{copies / 'changes'}")

    _round(testweb, out, urls["/"], *args, resumed=False)
    first = records(out, "chunks")
    pages = {row["url"] for row in first}
    assert pages == set(urls.values()) - {urls["/added.html"]}
    assert all(not row["deleted"] and row["text"] and len(row["text"]) <= 300 for row in first)
    by_id = {row["chunk_id"]: row for row in first}
    assert len(by_id) == len(first)  # ids are unique
    pricing = [r for r in first if r["url"] == urls["/article.html"] and r["heading_path"][-1:] == ["Pricing"]]
    assert len(pricing) == 1 and "Prices stay the same" in pricing[0]["text"]
    assert records(out, "changes") == []  # the first run is the baseline: nothing "changed" yet

    _round(testweb, out, *args, resumed=True)  # nothing changed (stable.html's bytes did: fetched whole, same text)
    assert records(out, "chunks") == first
    assert records(out, "changes") == []
    assert not hooked.exists()

    watch.round = 2
    _round(testweb, out, *args, resumed=True)
    rows = _new_rows(out, "chunks", len(first))
    written = {(r["url"], r["deleted"]) for r in rows}
    edited = [r for r in rows if r["url"] == urls["/article.html"]]
    old_id = pricing[0]["chunk_id"]
    assert sorted((r["deleted"], r["chunk_id"] == old_id) for r in edited) == [(False, False), (True, True)]
    assert "Prices went up" in next(r["text"] for r in edited if not r["deleted"])
    assert next(r for r in edited if not r["deleted"])["heading_path"] == pricing[0]["heading_path"]
    removed = [r for r in rows if r["url"] == urls["/removed.html"]]
    assert removed and all(r["deleted"] for r in removed)
    assert {r["chunk_id"] for r in removed} == {r["chunk_id"] for r in first if r["url"] == urls["/removed.html"]}
    assert (urls["/stable.html"], False) not in written
    added = [r for r in rows if r["url"] == urls["/added.html"]]
    assert added and not any(r["deleted"] for r in added)

    changes = {row["url"]: row for row in records(out, "changes")}
    assert set(changes) == {urls[p] for p in ("/", "/article.html", "/product.html", "/removed.html", "/added.html")}
    new = changes[urls["/added.html"]]
    assert new["change"] == "new" and new["previous_fetch_time"] == "" and "+This page is new." in new["text_diff"]
    assert changes[urls["/"]]["change"] == "changed" and "+/added.html" in changes[urls["/"]]["text_diff"]
    article = changes[urls["/article.html"]]
    assert article["change"] == "changed" and article["previous_fetch_time"] < article["fetch_time"]
    diff = article["text_diff"].splitlines()
    assert diff[:2] == ["--- previous", "+++ current"] and diff[3] == " Pricing" and diff[-1] == " - first plan"
    assert [line[:40] for line in diff[4:6]] == [
        "-Prices stay the same all year. Every pa",
        "+Prices went up by ten percent in March.",
    ]
    assert article["items_diff"] == {}
    product = changes[urls["/product.html"]]
    assert product["items_diff"] == {
        "added": [],
        "removed": [],
        "changed": [{"index": 0, "fields": {"price": [10.0, 12.5]}}],
    }
    gone = changes[urls["/removed.html"]]
    assert gone["change"] == "gone" and "-This page goes away." in gone["text_diff"]

    wait_until(lambda: hooked.exists() and len(hooked.read_text().splitlines()) == 5, 30, "five --on-change runs")
    hooks = {json.loads(line)["url"]: json.loads(line) for line in hooked.read_text().splitlines()}
    assert hooks == changes
    assert records(copies, "chunks") == records(out, "chunks")
    assert records(copies, "changes") == records(out, "changes")
    counters = stats(out)["counters"]
    assert (counters["changes-changed"], counters["changes-new"], counters["changes-gone"]) == (3, 1, 1)
    assert counters["chunks"] == len(records(out, "chunks"))


@pytest.mark.parametrize("sitemap", ["/sitemap.xml", "/sitemap.txt"])  # a text sitemap: one URL per line
def test_a_page_its_sitemap_drops_is_gone_once(testweb: TestWeb, tmp_path: Path, sitemap: str) -> None:
    watch = testweb.discovery.watch
    out = tmp_path / "crawl"
    hooked = tmp_path / "hooked.jsonl"
    args = ("--max-depth", "1", "--chunks", "300", "--changes", "--on-change", f"cat >> {hooked}")
    dropped = watch.url("/listed-b.html")
    seed = ("--sitemap", watch.url(sitemap))  # a text sitemap is read as one only when named as one
    _round(testweb, out, *seed, *args, resumed=False)
    first = records(out, "chunks")
    assert {watch.url(path) for path in LISTED} <= {row["url"] for row in first}  # and the two pages they link
    watch.drop_listed = True
    try:
        _round(testweb, out, *args, resumed=True)  # the sitemap drops /listed-b.html, which still answers 200
        changes = records(out, "changes")
        assert [(row["url"], row["change"]) for row in changes] == [(dropped, "gone")]
        diff = changes[0]["text_diff"].splitlines()
        assert any(line.startswith("-Listed page b says the same") for line in diff) and not any(
            line.startswith("+") for line in diff[2:]
        )
        assert changes[0]["previous_fetch_time"] < changes[0]["fetch_time"]
        tombstones = _new_rows(out, "chunks", len(first))
        assert tombstones and all(row["deleted"] and row["url"] == dropped for row in tombstones)
        assert {row["chunk_id"] for row in tombstones} == {row["chunk_id"] for row in first if row["url"] == dropped}
        wait_until(lambda: hooked.exists() and hooked.read_text().count("\n") == 1, 30, "one --on-change run")
        assert json.loads(hooked.read_text()) == changes[0]

        _round(testweb, out, *args, resumed=True)  # fetched again, still unlisted: announced once
        assert records(out, "changes") == changes
        assert _new_rows(out, "chunks", len(first)) == tombstones
        counters = stats(out)["counters"]
        assert counters["changes-gone"] == 1 and "changes-new" not in counters and "changes-changed" not in counters
    finally:
        watch.drop_listed = False
    assert hooked.read_text().count("\n") == 1


def test_recrawl_after_on_a_crawl_created_without_it_is_one_clear_error(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    polite_crawl(testweb, out, testweb.discovery.watch.url("/stable.html"), "--max-depth", "0", delay=DELAY)
    crawl = Crawl(out, ["--recrawl-after", "1h", *testweb.crawl_args()])
    assert crawl.wait(60) != 0
    lines = crawl.log().strip().splitlines()
    assert lines[-1].startswith("trawl: error: ") and "without --recrawl-after" in lines[-1]
    assert "Traceback" not in crawl.log()


def test_a_sink_that_cannot_hold_chunks_fails_at_start(testweb: TestWeb, tmp_path: Path) -> None:
    args = ["--chunks", "500", "--chunks-to", f"csv:{tmp_path / 'csv'}", *testweb.crawl_args()]
    crawl = Crawl(tmp_path / "crawl", [testweb.discovery.watch.url("/"), *args])
    assert crawl.wait(60) != 0
    last = crawl.log().strip().splitlines()[-1]
    assert last.startswith("trawl: error: ") and "not chunks" in last and "Traceback" not in crawl.log()


def test_kill_9_and_resume_lose_no_chunk(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    web = make_testweb(20, 6)
    seeds = web.seeds(2)
    out = tmp_path / "crawl"
    args = [*web.crawl_args(), "--delay", "0.2", "--robots-retry", "0.2", "--fetchers", "2", "--parsers", "1"]
    args += ["--chunks", "400"]
    crawl = Crawl(out, [*seeds, *args])
    kill_after = random.Random(os.getpid()).randint(20, 60)
    wait_until(lambda: len(records(out, "chunks")) >= kill_after, 300, f"{kill_after} chunks", crawl)
    crawl.kill_node()
    resume = Crawl(out, args, log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    taken = taken_back(resume.log())

    written = Counter((row["url"], row["chunk_id"]) for row in records(out, "chunks"))
    expected: Counter[tuple[str, str]] = Counter()
    for row in records(out):  # each fetch of a page: its chunks, as its record's Markdown cuts into them
        if isinstance(row.get("markdown"), str):
            expected.update((row["url"], c.chunk_id) for c in chunk_markdown(row["url"], row["markdown"], 400))
    assert len(expected) > kill_after
    assert set(written) == set(expected)  # none lost, none made up
    doubled = {url for (url, _), n in written.items() if n > 1}
    assert all(n <= expected[key] for key, n in written.items())  # written twice only if fetched (recorded) twice
    assert len(doubled) <= taken
