"""The model: deterministic, robots rules as served, and an expected crawl that obeys every rule."""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin, urlsplit

import protego
import pytest
from selectolax.lexbor import LexborHTMLParser

from webtrawl_testweb import OTHER_TOKEN, ExpectedCrawl, Variant, WebModel, WebOptions
from webtrawl_testweb.pages import link_block, render_page

N_HOSTS = 120
SEED = 3


@pytest.fixture(scope="module")
def model() -> WebModel:
    return WebModel(N_HOSTS, SEED, http_port=8080, https_port=8443)


@pytest.fixture(scope="module")
def crawl(model: WebModel) -> ExpectedCrawl:
    return model.expected_crawl(model.seeds(3))


def _path(url: str) -> str:
    return urlsplit(url).path


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def test_same_inputs_give_the_same_web_and_another_seed_another() -> None:
    a = WebModel(N_HOSTS, SEED, http_port=1, https_port=2)
    b = WebModel(N_HOSTS, SEED, http_port=1, https_port=2)
    c = WebModel(N_HOSTS, SEED + 1, http_port=1, https_port=2)
    assert [a.page(i, 1) for i in range(20)] == [b.page(i, 1) for i in range(20)]
    assert a.expected_fetches(a.seeds()) == b.expected_fetches(b.seeds())
    assert [a.page(i, 1).links for i in range(20)] != [c.page(i, 1).links for i in range(20)]


def test_hosts_follow_the_variant_and_scheme_tables(model: WebModel) -> None:
    for host in model.hosts():
        assert host.name == f"site{host.index}.test"
        assert host.variant == Variant(host.index % 10)
        assert host.scheme == ("http" if host.index % 4 == 0 else "https")
        assert host.port == (8080 if host.scheme == "http" else 8443)
        assert model.options.min_pages <= host.n_pages <= model.options.max_pages
    assert {h.n_pages for h in model.hosts()} == set(range(3, 13))
    assert model.url(4, "/p/2.html") == "http://site4.test:8080/p/2.html"
    assert model.url(5) == "https://site5.test:8443/"
    assert WebModel(8).url(3) == "https://site3.test/"  # default ports are left out


def test_crawl_delays_name_exactly_the_crawl_delay_hosts(model: WebModel) -> None:
    expected = {h.name: 1.0 for h in model.hosts_with(Variant.CRAWL_DELAY)}
    assert model.crawl_delays() == expected
    slow = WebModel(N_HOSTS, SEED, options=WebOptions(crawl_delay=2.5))
    assert set(slow.crawl_delays().values()) == {2.5}


def test_fetched_urls_obey_robots_and_skip_unavailable_hosts(model: WebModel, crawl: ExpectedCrawl) -> None:
    for url in crawl.fetched:
        located = model.locate(url)
        assert located is not None
        _, i, target = located
        assert model.host(i).variant is not Variant.ROBOTS_503
        assert model.allowed(i, target)
        assert not target.startswith(("/private/", "/n/"))
    assert not crawl.fetched & (crawl.disallowed | crawl.unavailable)
    assert {_host(u) for u in crawl.unavailable} == {
        h.name for h in model.hosts_with(Variant.ROBOTS_503) if h.name in crawl.hosts
    }
    assert crawl.unavailable and crawl.hosts >= {_host(u) for u in crawl.unavailable}


def test_disallowed_urls_are_the_ones_each_variant_names(model: WebModel, crawl: ExpectedCrawl) -> None:
    by_variant: dict[Variant, set[str]] = {}
    for url in crawl.disallowed:
        i = model.host_index(_host(url))
        assert i is not None
        by_variant.setdefault(model.host(i).variant, set()).add(_path(url))
    assert all(re.fullmatch(r"/private/[0-9]+\.html", p) for p in by_variant[Variant.PRIVATE])
    assert by_variant[Variant.TOKEN_GROUP] == {"/p/2.html"}  # the webtrawl group, not the * group
    assert by_variant[Variant.ROBOTS_REDIRECT] == {"/p/1.html"}  # the rules of the redirect target
    assert set(by_variant) == {Variant.PRIVATE, Variant.TOKEN_GROUP, Variant.ROBOTS_REDIRECT}
    token_group_fetched = {_path(u) for u in crawl.fetched if model.host_index(_host(u)) in range(5, N_HOSTS, 10)}
    assert "/p/1.html" in token_group_fetched


def test_redirects_are_fetched_and_their_targets_too(model: WebModel, crawl: ExpectedCrawl) -> None:
    assert crawl.redirects <= crawl.fetched
    paths = {_path(u) for u in crawl.redirects}
    assert "/away" in paths and any(p.startswith("/r/") for p in paths)
    for url in crawl.redirects:
        location = model.respond_url(url).location
        assert location is not None and location in crawl.discovered
        if _path(url) == "/away":
            assert _host(location) != _host(url)


def test_nofollow_targets_and_orphans_are_never_fetched(model: WebModel, crawl: ExpectedCrawl) -> None:
    assert not set(model.orphan_urls()) & crawl.discovered
    assert all(model.respond_url(u).status == 200 for u in model.orphan_urls())
    ignoring = model.expected_crawl(model.seeds(3), honor_nofollow=False)
    nofollow_targets = {u for u in ignoring.fetched if _path(u).startswith("/n/")}
    assert nofollow_targets
    assert crawl.fetched < ignoring.fetched
    # the meta and header nofollow pages link /n/1.html without rel: only they lead there when rel is honoured
    nofollow_pages = {h.index for v in (Variant.META_NOFOLLOW, Variant.X_ROBOTS_TAG) for h in model.hosts_with(v)}
    assert any(model.host_index(_host(u)) in nofollow_pages and _path(u) == "/n/1.html" for u in nofollow_targets)


def test_product_token_selects_the_robots_group(model: WebModel) -> None:
    seeds = model.seeds(3)
    token_hosts = {h.name for h in model.hosts_with(Variant.TOKEN_GROUP)}
    other = model.expected_crawl(seeds, product_token=OTHER_TOKEN)
    assert not {u for u in other.fetched if _host(u) in token_hosts}
    star = model.expected_crawl(seeds, product_token="somebot")
    star_disallowed = {_path(u) for u in star.disallowed if _host(u) in token_hosts}
    assert star_disallowed == {"/p/1.html"}
    assert model.expected_fetches(seeds, product_token="WebTrawl") == model.expected_fetches(seeds)


def test_nearly_all_hosts_are_reached_from_three_seeds(model: WebModel, crawl: ExpectedCrawl) -> None:
    usable = {h.name for h in model.hosts() if h.variant is not Variant.ROBOTS_503}
    reached = {_host(u) for u in crawl.fetched}
    assert len(reached) >= 0.95 * len(usable)
    assert crawl.hosts == reached | {_host(u) for u in crawl.unavailable | crawl.disallowed}


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("token", ["webtrawl", "WEBTRAWL", "otherbot", "somebot"])
def test_served_robots_txt_means_what_the_model_says(model: WebModel, variant: Variant, token: str) -> None:
    host = model.hosts_with(variant)[0]
    reply = model.respond(host.scheme, host.name, "/robots.txt")
    if reply.status == 301:
        assert reply.location == model.url(host.index, "/robots-real.txt")
        reply = model.respond_url(reply.location)
    paths = ["/", "/p/1.html", "/p/2.html", "/p/3.html", "/r/1", "/private/0.html", "/n/0.html", "/away"]
    if reply.status == 200:
        parser = protego.Protego.parse(reply.body.decode())
        for path in paths:
            assert model.allowed(host.index, path, token) == parser.can_fetch(model.url(host.index, path), token)
        assert model.crawl_delays(token).get(host.name) == parser.crawl_delay(token)
    else:  # 404: allow all; 503: RFC 9309 says assume complete disallow
        assert reply.status == (503 if variant is Variant.ROBOTS_503 else 404)
        assert all(model.allowed(host.index, p, token) == (reply.status == 404) for p in paths)


def test_respond_edge_cases(model: WebModel) -> None:
    host = model.host(1)  # https, PRIVATE
    assert model.respond("https", "site999.test", "/").status == 404
    assert model.respond("https", "example.com", "/").status == 404
    wrong = model.respond("http", host.name, "/p/1.html")
    assert (wrong.status, wrong.location) == (301, model.url(1, "/p/1.html"))
    assert model.respond("https", host.name, "/p/1.html?x=1").status == 404
    assert model.respond("https", host.name, f"/r/{host.n_pages}").status == 404
    assert model.respond("https", host.name, f"/p/{host.n_pages + 1}.html").status == 404
    assert model.respond("https", host.name, "/p/01.html").status == 404
    assert model.respond("https", host.name, "/private/0.html").status == 200
    assert model.respond("https", "SITE1.TEST", "/").status == 200
    unavailable = model.hosts_with(Variant.ROBOTS_503)[0]
    assert model.respond("http", unavailable.name, "/robots.txt").status == 503
    assert model.respond("https", unavailable.name, "/robots.txt").status == 503
    assert model.respond_url("https://site1.test:99999/").status == 404
    other = model.host(2)
    assert model.respond(other.scheme, other.name, "/private/0.html").status == 404
    assert model.respond(other.scheme, other.name, "/robots-real.txt").status == 404
    assert model.respond(other.scheme, other.name, "/away").status == 404


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError):
        WebOptions(min_pages=2)
    with pytest.raises(ValueError):
        WebOptions(corpus_fraction=1.5)
    with pytest.raises(ValueError):
        WebModel(0)


@pytest.mark.parametrize("i", [0, 1, 7, 8, 9, 15])
def test_rendered_links_resolve_to_the_model_urls(model: WebModel, i: int) -> None:
    for k in range(model.host(i).n_pages + 1):
        page = model.page(i, k)
        html = render_page(page)
        tree = LexborHTMLParser(html)
        title = tree.css_first("title")
        assert title is not None and title.text() == f"site {i} page {k}"
        anchors = tree.css("a[href]")
        assert [urldefrag(urljoin(page.url, a.attributes["href"] or "")).url for a in anchors] == [
            link.url for link in page.links
        ]
        assert [a.attributes.get("rel") or "" for a in anchors] == [link.rel for link in page.links]
        meta = tree.css_first('meta[name="robots"]')
        assert (meta is not None) == page.meta_nofollow
        block = LexborHTMLParser(link_block(page))
        assert [a.attributes["href"] for a in block.css("a")] == [link.url for link in page.links]
