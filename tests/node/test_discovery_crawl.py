"""End to end: URL discovery beyond ``<a href>`` (sitemaps, feeds, link rel, frames, meta refresh, requisites),
checked in the test web's access log: what a crawl of the ``*.disc.test`` hosts asked for, and what it did not."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
import redis.cluster
from warcio.archiveiterator import ArchiveIterator

from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import Crawl, is_robots, polite_crawl, records, stats, wait_until
from webtrawl.config import load
from webtrawl.errors import StateError
from webtrawl.node.shared import status
from webtrawl_testweb import TestWeb, fetched_urls, politeness_violations, robots_first_violations
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.local_cluster import LocalRedisCluster

DELAY = 0.1


def _crawl(web: TestWeb, out: Path, *args: str, resumed: bool = False) -> list[LogEntry]:
    return polite_crawl(web, out, *args, delay=DELAY, resumed=resumed)


def _dropped(out: Path) -> dict[str, str]:
    found = {}
    for path in sorted((out / "dropped").glob("*.jsonl*")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            found[row["url"]] = row["reason"]
    return found


def test_sitemaps_and_feeds_find_pages_no_link_reaches(testweb: TestWeb, tmp_path: Path) -> None:
    disc = testweb.discovery
    out = tmp_path / "crawl"
    feeds = [arg for feed in disc.feeds for arg in ("--sitemap", feed)]
    entries = _crawl(testweb, out, disc.sitemap_seed, *feeds)
    fetched = fetched_urls(entries)

    # robots.txt Sitemap: -> index -> a plain and a gzip sitemap; an RSS and an Atom feed given with --sitemap
    missing = disc.sitemap_pages() - fetched
    assert not missing, sorted(missing)
    # <link rel=canonical/alternate/next>, <iframe>, <frame>, meta refresh and Refresh headers are links too
    assert disc.linked_only() <= fetched, sorted(disc.linked_only() - fetched)
    # requisites only with --requisites
    assert not disc.requisites() & fetched
    # the cross-submission rule: neither robots.txt nor a sitemap of smap.disc.test may send us to another host
    assert not [e for e in entries if e.host == "other.disc.test"]
    assert disc.url("smap.disc.test", "/private/secret.html") not in fetched  # robots.txt still rules

    by_url = {row["url"]: row for row in records(out)}
    assert by_url[disc.url("smap.disc.test", "/sitemap-index.xml")]["sitemap"] == "index"
    assert by_url[disc.url("smap.disc.test", "/sitemaps/more.xml.gz")]["sitemap"] == "urlset"
    assert by_url[disc.feeds[0]]["sitemap"] == "rss"
    assert by_url[disc.feeds[1]]["sitemap"] == "atom"
    assert by_url[disc.url("smap.disc.test", "/private/secret.html")]["error"] == "robots"
    assert "sitemap" not in by_url[disc.url("smap.disc.test", "/only/1.html")]
    assert _dropped(out)[disc.url("other.disc.test", "/stolen.html")] == "sitemap-host"


def test_text_sitemaps_are_read_when_reached_as_sitemaps_and_only_then(testweb: TestWeb, tmp_path: Path) -> None:
    """sitemaps.org's text sitemaps (one URL per line) named by robots.txt, by a sitemap index (gzip) or by
    --sitemap were fetched and never read: the pages only they list were not crawled. A text page of URLs that
    nothing names a sitemap stays a page."""
    disc = testweb.discovery
    out = tmp_path / "crawl"
    entries = _crawl(testweb, out, disc.text_sitemap_seed, "--sitemap", disc.given_text_sitemap)
    fetched = fetched_urls(entries)
    missing = disc.text_sitemap_pages() - fetched
    assert not missing, sorted(missing)
    plain, listed = disc.not_a_sitemap()
    assert plain in fetched and not listed & fetched
    assert not [e for e in entries if e.host == "other.disc.test"]  # the cross-submission rule holds

    by_url = {row["url"]: row for row in records(out)}
    for path in ("/sitemap.txt", "/more.txt.gz", "/given.txt"):
        assert by_url[disc.url("text.disc.test", path)]["sitemap"] == "text", path
    assert "sitemap" not in by_url[plain]
    assert _dropped(out)[disc.url("other.disc.test", "/stolen-text.html")] == "sitemap-host"


def test_requisites_are_fetched_only_when_asked_and_sitemaps_off_ignores_them(testweb: TestWeb, tmp_path: Path) -> None:
    disc = testweb.discovery
    entries = _crawl(
        testweb, tmp_path / "crawl", disc.url("smap.disc.test", "/only/1.html"), "--requisites", "--sitemaps", "off"
    )
    fetched = fetched_urls(entries)
    assert disc.requisites() <= fetched
    assert disc.url("smap.disc.test", "/canon.html") in fetched
    assert disc.url("smap.disc.test", "/sitemap-index.xml") not in fetched  # robots.txt Sitemap: lines unused


def test_sitemaps_only_follows_no_links_of_pages(testweb: TestWeb, tmp_path: Path) -> None:
    disc = testweb.discovery
    entries = _crawl(testweb, tmp_path / "crawl", disc.sitemap_seed, "--sitemaps", "only")
    fetched = fetched_urls(entries)
    smap = {url for url in disc.sitemap_pages() if "smap.disc.test" in url}
    assert smap <= fetched
    assert not disc.linked_only() & fetched


@pytest.mark.parametrize("key", ["ip", "domain"])
def test_politeness_key_spaces_requests_across_all_host_names_of_one_address_or_domain(
    testweb: TestWeb, tmp_path: Path, key: str
) -> None:
    """Eight host names ip<i>.disc.test, all on 127.0.0.1 and all under the registered domain disc.test: with the
    key ip (address gates) or domain (one queue per domain) the server sees one request at a time and the gap
    between any two, whichever names they were for, although two fetchers with many slots could send more."""
    disc = testweb.discovery
    gap = 0.2
    mark = testweb.mark()
    out = tmp_path / "crawl"
    args = [*testweb.crawl_args(), "--politeness-key", key, "--delay", str(gap), "--fetchers", "2", "--parsers", "1"]
    crawl = Crawl(out, [disc.url("ip0.disc.test", "/"), *args, "--concurrency", "8"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    entries = testweb.entries(since=mark)
    assert disc.ip_pages() <= fetched_urls(entries)
    assert {e.host for e in entries} == set(disc.ip_hosts())
    as_one_server = [msgspec.structs.replace(e, host="127.0.0.1") for e in entries]
    assert politeness_violations(as_one_server, gap) == []
    assert robots_first_violations(entries) == []


def test_politeness_key_ip_holds_across_two_nodes_sharing_a_redis_cluster(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    """The address gates live in the cluster (each on its address's slot): two nodes, each with its own fetcher,
    still send one request at a time to the one address behind all eight names, with the gap between."""
    disc = testweb.discovery
    gap = 0.4
    url = redis_cluster.url
    mark = testweb.mark()
    args = [*testweb.crawl_args(), "--redis", url, "--cluster", "--delay", str(gap), "--fetchers", "1"]
    # One request in flight per node: the node whose parser finds the eight hosts first hears of them at once and
    # could lease them all before the other node's next poll (it did once, under a loaded CI run); so it holds at
    # most five (one fetching, four sleeping sessions), and its 15 pages of them take over 6 s at the address's
    # gap, while the other node polls its shards for the other three.
    args += ["--parsers", "1", "--concurrency", "1", "--politeness-key", "ip"]
    nodes = [NodeRun(tmp_path / n, [*args, "--node-id", n]) for n in "ab"]
    # both nodes up (waiting for seeds) before there is work: each then takes part from the first URL on
    config = load({"redis": url, "cluster": "true"}, env={})

    def node_ids() -> set[str]:
        try:
            return {n["id"] for n in status(config)["nodes"]}
        except StateError:  # no crawl yet
            return set()

    wait_until(lambda: node_ids() == {"a", "b"}, 120, "both nodes", nodes[0])
    trawl("seed", "--url", disc.url("ip0.disc.test", "/"), "--redis", url, "--cluster", "--politeness-key", "ip")
    for node in nodes:
        assert node.wait(300) == 0, node.log()[-3000:]
    entries = testweb.entries(since=mark)
    assert disc.ip_pages() <= fetched_urls(entries)
    assert all(records(node.out) for node in nodes)  # both nodes took part
    as_one_server = [msgspec.structs.replace(e, host="127.0.0.1") for e in entries]
    assert politeness_violations(as_one_server, gap) == []


@pytest.mark.parametrize("skip", [False, True])
def test_near_duplicates_are_flagged_and_skipping_them_does_not_follow_their_links(
    testweb: TestWeb, tmp_path: Path, skip: bool
) -> None:
    urls = testweb.discovery.dup_urls()
    out = tmp_path / "crawl"
    entries = _crawl(testweb, out, urls[""], "--skip-near-duplicates" if skip else "--near-duplicates")
    fetched = fetched_urls(entries)
    by_url = {row["url"]: row for row in records(out)}
    # /b.html is /a.html but for one word (and its navigation): flagged as a near-copy of the page fetched first
    assert by_url[urls["b"]]["near_duplicate_of"] == urls["a"]
    assert "near_duplicate_of" not in by_url[urls["a"]] and "near_duplicate_of" not in by_url[urls["c"]]
    assert len({by_url[urls[p]]["simhash"] for p in "abc"}) == 3
    assert "simhash" not in by_url[urls[""]]  # a few words: too short to judge
    assert urls["c-next"] in fetched
    if skip:
        assert urls["trap/1"] not in fetched
        assert _dropped(out)[urls["trap/1"]] == "near-duplicate"
    else:
        assert urls["trap/1"] in fetched


def _warc_records(out: Path) -> list[tuple[str, str, str]]:
    """(type, target URI, WARC-Profile) of every request-less record of a page (not a robots.txt), read with warcio
    checking digests."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type in ("response", "revisit"):
                    record.content_stream().read()
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    if is_robots(uri):
                        continue
                    found.append((record.rec_type, uri, record.rec_headers.get_header("WARC-Profile") or ""))
    return found


@dataclass(frozen=True)
class _Revisit:
    uri: str
    refers_date: str  # its WARC-Refers-To-Date
    original_date: str  # the WARC-Date of the response of its URI and payload digest
    replayed_status: int  # what a replay tool serves for it (see _revisits)


def _revisits(out: Path) -> list[_Revisit]:
    """Every revisit record and what replays it: pywb and ReplayWeb.page serve a revisit with the HTTP headers it
    holds, if any, and the payload of the response it refers to (its URI and payload digest), else that response."""
    responses, found = {}, []
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                head = record.rec_headers
                key = (head.get_header("WARC-Target-URI"), head.get_header("WARC-Payload-Digest"))
                http = record.http_headers.get_statuscode() if record.http_headers else ""
                if record.rec_type == "response":
                    responses[key] = (head.get_header("WARC-Date"), int(http))
                elif record.rec_type == "revisit":
                    found.append((key, head.get_header("WARC-Refers-To-Date"), int(http or 0)))
    revisits = []
    for key, refers, held in found:
        date, original = responses.get(key, ("", 0))
        revisits.append(_Revisit(key[0], refers, date, held or original))
    return revisits


def test_a_second_round_fetches_due_pages_with_conditional_gets_and_writes_revisits(
    testweb: TestWeb, tmp_path: Path
) -> None:
    urls = testweb.discovery.fresh_urls()
    out = tmp_path / "crawl"
    first = _crawl(testweb, out, urls["/"], "--recrawl-after", "0.001")
    assert {e.url for e in first if e.path != "/robots.txt"} == set(urls.values())
    assert len(_warc_records(out)) == 4

    second = _crawl(testweb, out, "--recrawl-after", "0.001", resumed=True)  # the same crawl again: its next round
    statuses = sorted((e.url, e.status) for e in second if e.path != "/robots.txt")
    assert statuses == sorted(
        [(urls["/"], 304), (urls["/same.html"], 304), (urls["/changes.html"], 200), (urls["/nodate.html"], 200)]
    )  # each page once: with If-None-Match where it had an ETag
    revisits = {uri: profile.rsplit("/", 1)[-1] for kind, uri, profile in _warc_records(out) if kind == "revisit"}
    assert revisits == {
        urls["/"]: "server-not-modified",
        urls["/same.html"]: "server-not-modified",
        urls["/nodate.html"]: "identical-payload-digest",  # no validators, the same bytes
    }
    rows = [row for row in records(out) if row.get("revisit")]
    assert sorted(row["url"] for row in rows) == sorted(revisits)
    # WARC 1.1: a revisit's WARC-Refers-To-Date is the WARC-Date of the record it refers to, to the character; and
    # each replays as the page (a 304's headers would make it an empty 304 in pywb, the latest capture of the page)
    found = _revisits(out)
    assert len(found) == 3 and all(r.refers_date == r.original_date for r in found), found
    assert {r.uri: r.replayed_status for r in found} == dict.fromkeys(revisits, 200)
    assert stats(out)["counters"]["recrawl-queued"] == 4


def test_pages_not_due_yet_are_not_fetched_again(testweb: TestWeb, tmp_path: Path) -> None:
    urls = testweb.discovery.fresh_urls()
    out = tmp_path / "crawl"
    _crawl(testweb, out, urls["/"], "--recrawl-after", "1h")
    assert _crawl(testweb, out, "--recrawl-after", "1h", resumed=True) == []
