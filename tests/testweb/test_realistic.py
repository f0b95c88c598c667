"""The realistic web has the shape the benchmark promises: robots.txt and fault shares, pages with their real
links pointing to other hosts, few seeds, determinism; and it is served over HTTP, HTTPS and DNS on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import zlib
from collections import Counter
from collections.abc import Callable
from itertools import islice
from urllib.parse import urlsplit

import brotli
import pytest
from selectolax.lexbor import LexborHTMLParser

from tests.fixtures.web_fixtures import fetch
from webtrawl.politeness import RobotsRules
from webtrawl_testweb import DEFAULT_CORPUS_DIR, Corpus, TestWeb
from webtrawl_testweb.realistic import (
    FAULTS,
    REDIRECT_HOPS,
    RealisticOptions,
    RealisticWeb,
    RobotsKind,
    parse_options,
)
from webtrawl_testweb.realpages import Templates
from webtrawl_testweb.robots import PRODUCT_TOKEN

N_HOSTS = 9_900
pytestmark = pytest.mark.skipif(not len(Corpus(DEFAULT_CORPUS_DIR)), reason="needs the corpus (../shared/corpus)")


@pytest.fixture(scope="module")
def templates() -> Templates:
    return Templates(Corpus(DEFAULT_CORPUS_DIR))


@pytest.fixture(scope="module")
def real(templates: Templates) -> RealisticWeb:
    return RealisticWeb(N_HOSTS, templates, seed=3, http_port=8080, https_port=8443)


def _hrefs(body: bytes) -> list[str]:
    return [a.attributes.get("href") or "" for a in LexborHTMLParser(body).css("a[href]")]


def _page(real: RealisticWeb, i: int, target: str = "/") -> bytes:
    reply = real.respond(real.schemes[i], f"site{i}.test", target)
    assert reply.status == 200 and reply.kind == "page"
    return b"".join(reply.body)


def _plain_hosts(real: RealisticWeb, count: int) -> list[int]:
    """The first ``count`` hosts with no fault whose root is a page (2% of roots are a 12 MB body or a bomb)."""
    plain = (i for i in range(real.n_hosts) if real.faults[i] is None)
    return list(islice((i for i in plain if real.respond(real.schemes[i], f"site{i}.test", "/").kind == "page"), count))


def test_robots_and_fault_shares_are_those_of_the_issue(real: RealisticWeb) -> None:
    kinds = Counter(real.robots)
    share = {k: kinds[k] / N_HOSTS for k in RobotsKind}
    served = share[RobotsKind.ORDINARY] + share[RobotsKind.BIG] + share[RobotsKind.CRAWL_DELAY]
    assert served == pytest.approx(0.35, abs=0.02)
    assert share[RobotsKind.BIG] == pytest.approx(0.05, abs=0.01)
    assert share[RobotsKind.UNAVAILABLE] == pytest.approx(0.05, abs=0.01)
    assert share[RobotsKind.CRAWL_DELAY] == pytest.approx(0.03, abs=0.01)
    faults = Counter(f for f in real.faults if f is not None)
    assert sum(faults.values()) / N_HOSTS == pytest.approx(0.07, abs=0.015)
    assert set(faults) == set(FAULTS)
    assert min(faults.values()) > 0.01 * N_HOSTS
    assert real.shares()["https"] == pytest.approx(0.80, abs=0.03)


def test_about_one_page_in_a_hundred_is_a_12_mb_body_and_one_a_gzip_bomb_on_any_host(real: RealisticWeb) -> None:
    kinds: Counter[str] = Counter()
    hosts: dict[str, set[int]] = {"fault-huge": set(), "fault-bomb": set()}
    for i in _plain_hosts(real, 400):
        for k in range(50):
            reply = real.respond(real.schemes[i], f"site{i}.test", f"/article/{k}.html")
            kinds[reply.kind] += 1
            if reply.kind in hosts:
                hosts[reply.kind].add(i)
    total = sum(kinds.values())
    assert kinds["fault-huge"] / total == pytest.approx(0.01, abs=0.003)
    assert kinds["fault-bomb"] / total == pytest.approx(0.01, abs=0.003)
    assert kinds["404"] / total == pytest.approx(0.03, abs=0.006)
    assert min(map(len, hosts.values())) > 100  # spread over the hosts, not a few hosts' habit
    i = _plain_hosts(real, 1)[0]
    replies = [real.respond(real.schemes[i], f"site{i}.test", f"/{k}") for k in range(1000)]
    huge = next(r for r in replies if r.kind == "fault-huge")
    assert huge.status == 200 and sum(map(len, huge.body)) >= 12 * 1024 * 1024
    bomb = next(r for r in replies if r.kind == "fault-bomb")
    assert bomb.status == 200 and ("Content-Encoding", "gzip") in bomb.headers
    wire = b"".join(bomb.body)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert len(inflater.decompress(wire, 100 * len(wire))) == 100 * len(wire)  # and more to come
    assert inflater.unconsumed_tail


def test_robots_files_answer_as_their_kind(real: RealisticWeb) -> None:
    first = {kind: real.robots.index(kind) for kind in RobotsKind}
    big = real.respond(real.schemes[first[RobotsKind.BIG]], f"site{first[RobotsKind.BIG]}.test", "/robots.txt")
    body = b"".join(big.body)
    assert big.status == 200 and len(body) > 500_000
    assert len(re.findall(rb"(?m)^(?:Dis)?[Aa]llow:", body)) >= 16_000
    i = first[RobotsKind.CRAWL_DELAY]
    delayed = real.respond(real.schemes[i], f"site{i}.test", "/robots.txt")
    rules = RobotsRules(b"".join(delayed.body), token=PRODUCT_TOKEN)
    assert rules.crawl_delay == real.options.crawl_delay
    assert not rules.allowed(real.url(i, "/search"))
    i = first[RobotsKind.UNAVAILABLE]
    for scheme in ("http", "https"):  # a 503 robots.txt on either scheme
        assert real.respond(scheme, f"site{i}.test", "/robots.txt").status == 503
    i = first[RobotsKind.NONE]
    assert real.respond(real.schemes[i], f"site{i}.test", "/robots.txt").status == 404


def test_pages_keep_about_a_hundred_absolute_links_to_many_other_test_hosts(real: RealisticWeb) -> None:
    pattern = re.compile(r"https?://site([0-9]+)\.test:(8080|8443)(?:[/?#]|$)")
    absolute, hosts, others = [], [], 0
    for i in _plain_hosts(real, 40):
        hrefs = _hrefs(_page(real, i))
        # every real host name is gone (a broken real href like "http://Pinterest" stays as broken as it was)
        links = [h for h in hrefs if h.startswith(("http:", "https:")) and "." in (urlsplit(h).hostname or "")]
        assert all(pattern.match(h) for h in links), [h for h in links if not pattern.match(h)][:3]
        targets = {int(pattern.match(h).group(1)) for h in links}  # type: ignore[union-attr]
        absolute.append(len(links))
        hosts.append(len(targets - {i}))
        universe = len(real.templates.universe)
        others += sum(1 for t in targets if t % universe != i % universe)
    assert sum(absolute) / len(absolute) > 60  # the corpus pages average ~88 absolute <a href>
    assert sum(hosts) / len(hosts) > 5  # ... to ~15 hosts
    assert others > 100


def test_links_spread_over_the_whole_web_and_no_real_host_name_is_left(real: RealisticWeb) -> None:
    reached: set[int] = set()
    for i in _plain_hosts(real, 300):
        body = _page(real, i, "/")
        reached.update(int(m) for m in re.findall(rb"site([0-9]+)\.test", body))
        hosts = {urlsplit(h).hostname or "" for h in _hrefs(body) if h.startswith(("http:", "https:", "//"))}
        assert all(re.fullmatch(r"site[0-9]+\.test", h) for h in hosts if "." in h), hosts
    assert len(reached) > 0.3 * N_HOSTS
    assert max(reached) > N_HOSTS - len(real.templates.universe)  # the last replicas are linked too


def test_only_a_few_hosts_are_seeded_and_they_are_crawlable(real: RealisticWeb) -> None:
    seeds = real.seeds()
    assert len(seeds) == RealisticOptions().seeds
    for url in seeds:
        i = real.host_index(urlsplit(url).hostname or "")
        assert i is not None and real.faults[i] is None
        assert real.robots[i] in (RobotsKind.NONE, RobotsKind.ORDINARY)


def test_the_web_is_a_function_of_its_seed(templates: Templates, real: RealisticWeb) -> None:
    again = RealisticWeb(N_HOSTS, templates, seed=3, http_port=8080, https_port=8443)
    other = RealisticWeb(N_HOSTS, templates, seed=4, http_port=8080, https_port=8443)
    i = _plain_hosts(real, 1)[0]
    assert _page(again, i, "/about.html") == _page(real, i, "/about.html")
    assert again.robots == real.robots and again.faults == real.faults
    assert other.robots != real.robots


def _fault_urls(real: RealisticWeb, fault: str) -> tuple[int, list[str]]:
    i = real.faults.index(fault)
    return i, [f"/{fault}/{k}.html" for k in range(40)]


def test_fault_hosts_misbehave_on_about_half_of_their_urls(real: RealisticWeb) -> None:
    seen: dict[str, Counter[str]] = {}
    for fault in FAULTS:
        i, targets = _fault_urls(real, fault)
        replies = [real.respond(real.schemes[i], f"site{i}.test", t) for t in targets]
        seen[fault] = Counter(r.kind for r in replies)
        assert 8 <= seen[fault]["fault-" + fault] <= 32, (fault, seen[fault])
        for r in replies:
            if r.kind != "fault-" + fault:  # a page (or, by its own draw, a 12 MB body or a bomb)
                continue
            if fault == "unavailable":
                assert r.status == 503 and ("Retry-After", "30") in r.headers
            elif fault == "slow":
                assert r.status == 200 and r.rate == 8 * 1024
            elif fault == "pdf":
                assert r.content_type == "application/pdf" and r.body[0].startswith(b"%PDF-")
            else:
                assert r.status in (301, 302)


def _follow(real: RealisticWeb, i: int, target: str, limit: int = 10) -> list[int]:
    statuses = []
    for _ in range(limit):
        reply = real.respond(real.schemes[i], f"site{i}.test", target)
        statuses.append(reply.status)
        location = dict(reply.headers).get("Location")
        if location is None:
            break
        target = urlsplit(location).path
    return statuses


def test_redirect_hosts_have_chains_that_end_and_loops_that_do_not(real: RealisticWeb) -> None:
    i, targets = _fault_urls(real, "redirects")
    runs = [_follow(real, i, t) for t in targets]
    assert [301] * REDIRECT_HOPS + [200] in runs
    assert any(len(r) == 10 and set(r) == {301, 302} for r in runs)  # a loop never ends


def _dns_query(port: int, name: str) -> tuple[int, bytes]:
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00" + struct.pack("!HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + question, ("127.0.0.1", port))
        data = s.recv(512)
    return data[3] & 0x0F, data[-4:]


def test_served_over_http_https_and_dns_on_loopback() -> None:
    with TestWeb(60, 1, realistic=RealisticOptions(seeds=4)) as web:
        assert web.real is not None
        args = web.crawl_args()
        assert "--nameservers" in args and "--resolve" not in args and "127.0.0.0/8" in args
        seeds = web.seeds()
        assert len(seeds) == 4
        urls = [web.real.url(i, "/") for i in range(60) if web.real.faults[i] is None][:8]
        assert {urlsplit(u).scheme for u in urls} == {"http", "https"}
        pages = fetch(web, urls)
        assert all(p.status == 200 and b"site" in p.body for p in pages)
        dns_port = int(web.dns_address.rsplit(":", 1)[1])
        assert _dns_query(dns_port, "site5.test") == (0, socket.inet_aton("127.0.0.1"))
        assert _dns_query(dns_port, "www.nytimes.com")[0] == 3  # NXDOMAIN: no real name resolves
        conn = http.client.HTTPConnection("127.0.0.1", web.http_port, timeout=10)
        conn.request("GET", "/_stats", headers={"Host": "127.0.0.1"})
        assert json.loads(conn.getresponse().read())["page"] == len(urls)
        conn.close()


def test_options_are_set_by_name_and_a_wrong_one_is_refused() -> None:
    opts = parse_options(["https_share=0", "huge_share=0.05", "seeds=3", "latency_ms=250"], seeds=7)
    assert (opts.https_share, opts.huge_share, opts.seeds, opts.latency_ms) == (0.0, 0.05, 3, 250.0)
    assert parse_options([], seeds=7) == RealisticOptions(seeds=7)
    for bad in ("nope=1", "https_share", "https_share=lots", "https_share=2", "seeds=1.5", "latency_ms=-5"):
        with pytest.raises(ValueError):
            parse_options([bad], seeds=7)


def test_servers_can_close_every_connection_and_send_the_headers_real_sites_send() -> None:
    options = RealisticOptions(seeds=2, close_share=1.0, headers_share=1.0, latency_ms=1.0)  # waits answer too
    with TestWeb(40, 1, realistic=options) as web:
        assert web.real is not None
        i = next(i for i in range(40) if web.real.schemes[i] == "http" and web.real.faults[i] is None)
        conn = http.client.HTTPConnection("127.0.0.1", web.http_port, timeout=10)
        conn.request("GET", "/", headers={"Host": f"site{i}.test"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read()
        assert resp.getheader("Connection") == "close" and resp.will_close
        assert len(resp.msg.get_all("Set-Cookie") or []) == 2
        assert resp.getheader("Content-Security-Policy", "").startswith("default-src")
        conn.close()
    plain = RealisticWeb(40, Templates(Corpus(DEFAULT_CORPUS_DIR)), seed=1)
    reply = plain.respond(plain.schemes[0], "site0.test", "/")
    assert not reply.close and not any(name == "Set-Cookie" for name, _ in reply.headers)  # off by default


def test_most_hosts_gzip_their_pages_for_a_client_that_accepts_it(real: RealisticWeb) -> None:
    hosts = [i for i in range(600) if real.faults[i] is None]
    gzipped = 0
    for i in hosts:
        name, scheme = f"site{i}.test", real.schemes[i]
        plain = real.respond(scheme, name, "/a/page")
        packed = real.respond(scheme, name, "/a/page", gzip=True)
        if plain.kind != "page":
            assert packed == plain  # 404s, 12 MB bodies and bombs go as they are
            continue
        if ("Content-Encoding", "gzip") in packed.headers:
            gzipped += 1
            assert zlib.decompress(b"".join(packed.body), 16 + zlib.MAX_WBITS) == b"".join(plain.body)
            assert packed.decoded == len(b"".join(plain.body)) > 2 * len(b"".join(packed.body))
        else:
            assert packed == plain
        robots = real.respond(scheme, name, "/robots.txt", gzip=True)
        assert not any(k == "Content-Encoding" for k, _ in robots.headers)
    assert 0.78 < gzipped / len(hosts) < 0.92  # gzip_share 0.85 (pages: all but ~5% of these URLs)


def test_brotli_hosts_send_their_pages_in_brotli_to_a_client_that_accepts_it(
    real: RealisticWeb, templates: Templates
) -> None:
    options = RealisticOptions(br_share=0.5)  # else as ``real``, which shows the default (no brotli)
    web = RealisticWeb(N_HOSTS, templates, seed=3, http_port=8080, https_port=8443, options=options)
    hosts = [i for i in range(600) if web.faults[i] is None]
    in_brotli = 0
    for i in hosts:
        name, scheme = f"site{i}.test", web.schemes[i]
        plain = web.respond(scheme, name, "/a/page")
        either = web.respond(scheme, name, "/a/page", gzip=True, br=True)
        assert web.respond(scheme, name, "/a/page", gzip=True) == real.respond(scheme, name, "/a/page", gzip=True)
        assert real.respond(scheme, name, "/a/page", gzip=True, br=True) == real.respond(  # none by default
            scheme, name, "/a/page", gzip=True
        )
        if plain.kind != "page":
            assert either == plain
            continue
        if ("Content-Encoding", "br") in either.headers:
            in_brotli += 1
            assert brotli.decompress(b"".join(either.body)) == b"".join(plain.body)
            assert either.decoded == len(b"".join(plain.body)) > 2 * len(b"".join(either.body))
            assert web.respond(scheme, name, "/a/page", br=True) == either  # whether or not it also gzips
        robots = web.respond(scheme, name, "/robots.txt", gzip=True, br=True)
        assert not any(k == "Content-Encoding" for k, _ in robots.headers)
    assert 0.42 < in_brotli / len(hosts) < 0.58  # br_share 0.5 (pages: all but ~5% of these URLs)


_DECODE: dict[str | None, Callable[[bytes], bytes]] = {
    "gzip": lambda body: zlib.decompress(body, 16 + zlib.MAX_WBITS),
    "br": brotli.decompress,
    None: lambda body: body,
}


@pytest.mark.parametrize(
    ("br_share", "asked", "sent"),
    [
        (0.0, ("gzip, br", ""), ("gzip", None)),  # no brotli by default; no Accept-Encoding: the page as it is
        (1.0, ("gzip, deflate, br;q=0.9", "gzip"), ("br", "gzip")),  # a brotli host gzips for a client without br
    ],
)
def test_an_encoded_page_is_served_and_logged_with_its_decoded_size(
    br_share: float, asked: tuple[str, str], sent: tuple[str | None, str | None]
) -> None:
    options = RealisticOptions(seeds=2, gzip_share=1.0, br_share=br_share, https_share=0.0)
    with TestWeb(40, 1, realistic=options) as web:
        assert web.real is not None
        i = next(
            i
            for i in range(40)
            if web.real.faults[i] is None and web.real.respond("http", f"site{i}.test", "/").kind == "page"
        )
        since = web.mark()
        conn = http.client.HTTPConnection("127.0.0.1", web.http_port, timeout=10)
        bodies = []
        for accept, coding in zip(asked, sent, strict=True):
            conn.request(
                "GET", "/", headers={"Host": f"site{i}.test", **({"Accept-Encoding": accept} if accept else {})}
            )
            resp = conn.getresponse()
            assert resp.getheader("Content-Encoding") == coding
            bodies.append(resp.read())
        conn.close()
        html = _DECODE[sent[0]](bodies[0])
        assert _DECODE[sent[1]](bodies[1]) == html
        logged = [(e.nbytes, e.decoded) for e in web.entries(since=since) if e.kind == "page"]
        assert logged == [(len(body), len(html) if coding else 0) for body, coding in zip(bodies, sent, strict=True)]
