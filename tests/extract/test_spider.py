"""Spiders on single pages: routing to callbacks by the route a page's link carried, data handed on, and every way
user code can get routing wrong recorded as the yielding page's extract-error."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.extract.helpers import extract_ctx, run
from tests.parse.helpers import make_page
from webtrawl.config import DiscoveryOptions, ExtractionOptions, FetchOptions, Limits, Politeness
from webtrawl.errors import InputError
from webtrawl.extract.routing import MAX_DATA_BYTES, decode_route, encode_route
from webtrawl.extract.rules import load_rules
from webtrawl.parse import process_page
from webtrawl.parse.worker import build_context

SHOP = Path(__file__).with_name("shop.py")
HOME = b"<h1>Shop</h1><a class=cat href=/c/0/1>Garden</a><a class=cat href=/c/1/1>Books</a><a href=/about>about</a>"
LISTING = (
    b"<h1>Garden</h1><a class=product href=/p/1>1</a><a class=product href=/go/2>2</a>"
    b"<a class=next href=/c/0/2>next</a><a href=/>home</a>"
)


def _spider(name: str = "ShopSpider") -> str:
    return f"{SHOP}:{name}"


def test_a_spider_routes_links_to_callbacks_with_their_data() -> None:
    home = run(make_page(HOME, url="http://shop.test/"), spider=_spider())
    assert home.record.error is None and home.items == []
    # only what the callback yields is followed (not /about); each link carries its callback and data
    assert [(n.url, decode_route(n.route)) for n in home.new_urls] == [
        ("http://shop.test/c/0/1", ("parse_listing", {"category": "Garden"})),
        ("http://shop.test/c/1/1", ("parse_listing", {"category": "Books"})),
    ]
    route = home.new_urls[0].route
    listing = run(make_page(LISTING, url="http://shop.test/c/0/1", route=route), spider=_spider())
    data = {"category": "Garden", "listing": "http://shop.test/c/0/1"}
    assert [(n.url, decode_route(n.route)) for n in listing.new_urls] == [
        ("http://shop.test/p/1", ("parse_product", data)),
        ("http://shop.test/go/2", ("parse_product", data)),
        ("http://shop.test/c/0/2", ("parse_listing", {"category": "Garden"})),
    ]
    product_page = b"<h1 class=name>Rake</h1><p class=price>9.99</p><a href=/p/7>related</a>"
    product = run(
        make_page(product_page, url="http://shop.test/p/1", route=listing.new_urls[0].route), spider=_spider()
    )
    assert product.items == [{"name": "Rake", "price": 9.99, "callback": "parse_product", **data}]
    assert product.new_urls == []


def test_a_redirect_target_inherits_the_callback_and_data() -> None:
    route = encode_route("parse_product", {"category": "Garden"})
    page = make_page(b"", url="http://shop.test/go/2", status=301, headers=[("Location", "/p/2")], route=route)
    out = process_page(page, extract_ctx(spider=_spider()))
    assert [(n.url, n.hops, n.route) for n in out.new_urls] == [("http://shop.test/p/2", 1, route)]


def test_a_link_the_page_also_has_takes_the_route_a_follow_gives_it() -> None:
    """A spider following the page's own links too: the unrouted page link and the routed Follow are one URL."""
    html = b"<a href=/p/1>p</a><a class=product href=/p/1>p</a><a href=/other>o</a>"

    route = encode_route("parse_product", {"category": "c", "listing": "http://shop.test/c/0/1"})
    ctx = extract_ctx(spider=_spider())
    spider = ctx.extraction.extractor.spider  # type: ignore[union-attr]
    spider.follow_page_links = True
    out = process_page(
        make_page(html, url="http://shop.test/c/0/1", route=encode_route("parse_listing", {"category": "c"})), ctx
    )
    assert [(n.url, n.route) for n in out.new_urls] == [("http://shop.test/p/1", route), ("http://shop.test/other", "")]


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("raise", "ValueError: no price here"),
        ("big", f"over the cap of {MAX_DATA_BYTES}"),
        ("not-json", "Follow data is not JSON-able"),
        ("unknown", "Broken has no callback 'parse_nothing' (its callbacks: parse, parse_needs)"),
        ("private", "Broken has no callback '_helper'"),
        ("meta", "page.follow takes no meta: pass data={...} (the next page's page.data) instead"),
        ("dont-filter", "page.follow takes no dont_filter: a URL is queued once per crawl (--recrawl-after fetches"),
        ("headers", "page.follow takes no headers: every request carries the crawl's --header values (Crawler(header="),
        ("no-kwarg", "parse_needs() takes category from page.data (Scrapy's cb_kwargs), and Follow('/next', "),
    ],
)
def test_routing_mistakes_are_an_extract_error_on_the_yielding_page(path: str, detail: str) -> None:
    ctx = extract_ctx(spider=_spider("Broken"))
    out = process_page(make_page(b"<a href=/x>x</a>", url=f"http://shop.test/{path}"), ctx)
    assert out.record.error == "extract-error" and detail in str(out.record.error_detail)
    assert out.new_urls == []  # a spider follows only what it yields: not the refused Follow, not the page's links
    # a refused Follow is left out alone (the item yielded after it is kept); a raise stops the callback there
    assert out.items == ([] if path in ("raise", "meta", "dont-filter", "headers") else [{"ok": path}])
    fine = process_page(make_page(b"<a href=/x>x</a>", url="http://shop.test/fine"), ctx)
    assert fine.record.error is None and fine.items == [{"ok": "fine"}]


def _line_of(text: str) -> int:
    return SHOP.read_text().splitlines().index(text) + 1


def test_a_follow_naming_a_callback_the_spider_lacks_is_refused_alone() -> None:
    """``Follow(url, callback="parse_detial")`` voided its whole page: every item and link it yielded."""
    out = run(make_page(b"<a href=/x>x</a>", url="http://shop.test/typo"), spider=_spider("Broken"))
    line = _line_of('            yield Follow("/detail", callback="parse_detial")')
    assert out.record.error == "extract-error"
    assert out.record.error_detail == (
        f"UserCodeError: Broken has no callback 'parse_detial' (its callbacks: parse, parse_needs) (shop.py:{line})"
    )
    assert out.items == [{"ok": "before"}, {"ok": "typo"}]  # the page's other items and follows are kept
    assert [(n.url, decode_route(n.route)) for n in out.new_urls] == [
        ("http://shop.test/next", ("parse_needs", {"category": "c"}))
    ]


@pytest.mark.parametrize("path", ["follow-typo", "follow-all-typo"])
def test_page_follow_refuses_a_callback_the_spider_lacks_where_it_is_made(path: str) -> None:
    """As Scrapy's ``response.follow(url, self.parse_detial)`` fails at that line: what came before is kept."""
    out = run(make_page(b"<a href=/x>x</a>", url=f"http://shop.test/{path}"), spider=_spider("Broken"))
    call = "page.follow(" if path == "follow-typo" else "page.follow_all("
    line = next(i for i, text in enumerate(SHOP.read_text().splitlines(), 1) if call in text and "parse_detial" in text)
    assert out.record.error_detail == (
        "ValueError: page.follow: Broken has no callback 'parse_detial' (its callbacks: parse, parse_needs) "
        f"(shop.py:{line})"
    )
    assert out.items == [{"ok": "before"}] and out.new_urls == []


def test_a_spider_callback_that_raises_keeps_the_items_and_routed_links_it_yielded_before() -> None:
    out = run(make_page(b"<a href=/x>x</a>", url="http://shop.test/midway"), spider=_spider("Broken"))
    assert out.record.error == "extract-error"
    assert "ValueError: no price after the first" in str(out.record.error_detail)
    assert out.items == [{"ok": "before"}]
    # the Follow it yielded, with its callback and data; not the page's own links (a spider follows what it yields)
    assert [(n.url, decode_route(n.route)) for n in out.new_urls] == [
        ("http://shop.test/next", ("parse_needs", {"category": "c"}))
    ]


def test_callbacks_take_their_links_data_as_keyword_parameters_as_scrapys_cb_kwargs() -> None:
    """A ported ``def parse_product(self, response, category)`` failed on every page (it was called with the page
    alone), and ``page.follow(..., cb_kwargs=...)`` was refused: each of a Scrapy spider's callbacks needed editing."""
    spec = _spider("KwargsShop")
    home = run(make_page(HOME, url="http://shop.test/"), spider=spec)
    assert decode_route(home.new_urls[0].route) == ("parse_listing", {"category": "Garden"})
    listing = run(make_page(LISTING, url="http://shop.test/c/0/1", route=home.new_urls[0].route), spider=spec)
    assert listing.record.error is None
    data = {"category": "Garden", "listing": "http://shop.test/c/0/1", "number": 1}
    assert [(n.url, decode_route(n.route)) for n in listing.new_urls] == [
        ("http://shop.test/p/1", ("parse_product", data)),
        ("http://shop.test/go/2", ("parse_product", data)),
        ("http://shop.test/c/0/2", ("parse_listing", {"category": "Garden", "number": 2})),
    ]
    product = run(make_page(b"<h1>Rake</h1>", url="http://shop.test/p/1", route=listing.new_urls[0].route), spider=spec)
    assert product.items == [{"name": "Rake", **data}]  # **rest takes the keys no parameter names


def test_a_data_key_named_as_the_page_parameter_stays_in_page_data_for_a_callback_taking_kwargs() -> None:
    """``def parse_product(self, page, category, **rest)`` (as the README writes it) reached with ``data={"page":
    2, ...}``, a listing's page number: every such page failed with "got multiple values for argument 'page'"."""
    route = encode_route("parse_product", {"category": "Garden", "page": 2})
    out = run(make_page(b"<h1>Rake</h1>", url="http://shop.test/p/1", route=route), spider=_spider("KwargsShop"))
    assert out.record.error is None and out.items == [{"name": "Rake", "category": "Garden"}]


def test_a_page_whose_callback_lacks_a_keyword_parameter_is_an_extract_error() -> None:
    page = make_page(b"<h1>x</h1>", url="http://shop.test/p/1", route=encode_route("parse_product", {"listing": "l"}))
    out = run(page, spider=_spider("KwargsShop"))
    assert out.record.error == "extract-error" and out.items == []
    assert (
        "parse_product() takes category from page.data (Scrapy's cb_kwargs), and the link that led here gave no "
        "data['category'] (its data keys: listing)" in str(out.record.error_detail)
    )


def test_follow_data_that_is_not_a_dict_to_a_callback_with_parameters_is_refused_alone() -> None:
    """The parameter check read the data first: ``data=5`` raised TypeError ("argument of type 'int' is not
    iterable") from webtrawl's code, not the refusal the same data gets for a callback without parameters."""
    out = run(make_page(b"<h1>x</h1>", url="http://shop.test/"), spider=_spider("NumberData"))
    assert str(out.record.error_detail).startswith("UserCodeError: Follow data must be a dict, not a int")
    assert [(n.url, decode_route(n.route)) for n in out.new_urls] == [
        ("http://shop.test/p/2", ("parse_product", {"category": "Garden"}))
    ]


def test_async_callbacks_run_as_scrapy_runs_them() -> None:
    """``async def parse(self, response)`` (an async generator, or a coroutine returning items) was each page's
    extract-error: "the callback gave a async_generator"."""
    spec = _spider("AsyncCallbacks")
    home = run(make_page(b"<h1>Rake</h1>", url="http://shop.test/p/1"), spider=spec)
    assert home.record.error is None and home.items == [{"name": "Rake"}]
    assert [(n.url, decode_route(n.route)) for n in home.new_urls] == [("http://shop.test/p/2", ("parse_product", {}))]
    page = make_page(b"<h1>Hoe</h1>", url="http://shop.test/p/2", route=home.new_urls[0].route)
    assert run(page, spider=spec).items == [{"product": "Hoe", "category": None}]


def test_an_async_callback_that_reuses_a_dict_hands_on_what_it_held_at_each_yield() -> None:
    """An async generator's values were all taken after it ended: a dict it filled again for each link gave every
    link (and item) the last category, where the same sync callback gives each its own."""
    home = run(make_page(HOME, url="http://shop.test/"), spider=_spider("AsyncReusedDict"))
    assert home.record.error is None and home.items == [{"category": "Garden"}, {"category": "Books"}]
    assert [(n.url, decode_route(n.route)) for n in home.new_urls] == [
        ("http://shop.test/c/0/1", ("parse", {"category": "Garden"})),
        ("http://shop.test/c/1/1", ("parse", {"category": "Books"})),
    ]


def test_a_dataclass_item_is_an_item_as_in_scrapy() -> None:
    """Scrapy projects declare items as dataclasses (itemadapter): each was a page's extract-error."""
    out = run(make_page(b"<h1>x</h1>", url="http://shop.test/dataclass"), spider=_spider("Broken"))
    assert out.record.error is None
    assert out.items == [{"name": "Rake", "price": 9.5}, {"ok": "dataclass"}]


def test_a_page_routed_to_a_callback_the_spider_lost_is_an_extract_error() -> None:
    page = make_page(b"<h1>x</h1>", url="http://shop.test/p/1", route=encode_route("parse_gone", None))
    out = run(page, spider=_spider())
    assert out.record.error == "extract-error" and "has no callback 'parse_gone'" in str(out.record.error_detail)


def test_a_function_callback_hands_data_on_but_cannot_name_a_callback() -> None:
    spec = f"{SHOP}:plain"
    first = run(make_page(b"", url="http://shop.test/a"), extract=spec)
    assert first.items == [{"data": {}, "callback": "parse"}]
    (with_data,) = [n for n in first.new_urls if n.route]
    second = run(make_page(b"", url=with_data.url, route=with_data.route), extract=spec)
    assert second.items[0] == {"data": {"from": "http://shop.test/a"}, "callback": "parse"}
    named = run(make_page(b"", url="http://shop.test/named"), extract=spec)
    assert named.record.error == "extract-error" and "needs a spider class" in str(named.record.error_detail)


def test_unrouted_links_cost_nothing() -> None:
    assert encode_route(None, None) == encode_route("parse", {}) == ""
    assert decode_route("") == ("parse", {})


def test_a_scrapy_style_spider_follows_selectors_and_joins_urls_as_scrapy_does() -> None:
    """``page.follow(selector, callback)``, ``page.follow_all(css=...)`` and ``page.urljoin`` (Scrapy's
    ``response.follow``/``follow_all``/``urljoin``) were missing: a ported spider failed on every page."""
    home = run(make_page(HOME, url="http://shop.test/"), spider=_spider("PortedShop"))
    assert [(n.url, decode_route(n.route)) for n in home.new_urls] == [
        ("http://shop.test/c/0/1", ("parse_listing", {"category": "Garden"})),
        ("http://shop.test/c/1/1", ("parse_listing", {"category": "Books"})),
    ]
    listing = run(
        make_page(LISTING, url="http://shop.test/c/0/1", route=home.new_urls[0].route), spider=_spider("PortedShop")
    )
    data = {"category": "Garden", "listing": "http://shop.test/c/0/1"}
    assert [(n.url, decode_route(n.route)) for n in listing.new_urls] == [
        ("http://shop.test/p/1", ("parse_product", data)),
        ("http://shop.test/go/2", ("parse_product", data)),
        ("http://shop.test/c/0/2", ("parse_listing", {"category": "Garden"})),
    ]
    product = (
        b"<base href='/media/'><h1>Rake</h1><img src='rake.png'><a class=elsewhere href='http://other.test/x'>o</a>"
    )
    route = encode_route("parse_product", None)
    out = run(make_page(product, url="http://shop.test/p/1", route=route), spider=_spider("PortedShop"))
    assert out.items == [{"name": "Rake", "category": None, "image": "http://shop.test/media/rake.png"}]


def test_a_spiders_allowed_domains_drop_offsite_links_as_scrapy_does() -> None:
    """``allowed_domains`` was silently ignored: a ported spider followed links to any host."""
    ctx = build_context(
        [],
        fetch=FetchOptions(),
        limits=Limits(),
        politeness=Politeness(),
        discovery=DiscoveryOptions(),
        extraction=ExtractionOptions(spider=_spider("PortedShop")),
    )
    html = (
        b"<h1>Rake</h1><a class=elsewhere href='http://other.test/x'>o</a>"
        b"<a class=elsewhere href='http://img.shop.test/y'>sub</a><a class=elsewhere href='http://notshop.test/z'>n</a>"
    )
    out = process_page(make_page(html, url="http://shop.test/p/1", route=encode_route("parse_product", None)), ctx)
    assert [n.url for n in out.new_urls] == ["http://img.shop.test/y"]
    offsite = ["http://other.test/x", "http://notshop.test/z", "http://offsite.test/p/1"]
    assert out.dropped == [(url, "scope") for url in offsite]
    redirect = make_page(b"", url="http://shop.test/go/2", status=301, headers=[("Location", "http://other.test/p")])
    assert process_page(redirect, ctx).dropped == [("http://other.test/p", "scope")]


def test_a_spider_of_the_running_script_resolves_in_spawned_children(tmp_path: Path) -> None:
    """``__main__:Class``: the API builds spiders defined in the user's script in its spawned parsers."""
    script = tmp_path / "myscript.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing
            from webtrawl.extract import Spider, load_spider

            class Mine(Spider):
                start_urls = ["http://a.test/"]

            def child(q):
                q.put(load_spider("__main__:Mine").start_urls)

            if __name__ == "__main__":
                ctx = multiprocessing.get_context("spawn")
                q = ctx.Queue()
                p = ctx.Process(target=child, args=(q,))
                p.start()
                print(q.get(timeout=60))
                p.join()
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "['http://a.test/']"


RULES = """
[[rule]]
url = '/c/'
follow = "css:a.product, a.next"
data = { category = "css:h1::text" }
[rule.fields]
listing = "css:h1::text"

[[rule]]
url = '/(p|go)/'
[rule.fields]
name = "css:h1::text"
category = "data:category"
shop = { data = "shop", default = "none" }
"""


def test_a_rules_data_reaches_the_pages_of_the_links_it_follows(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    incoming = encode_route(None, {"shop": "main"})
    listing = run(make_page(LISTING, url="http://shop.test/c/0/1", route=incoming), extract=str(rules))
    carried = encode_route(None, {"shop": "main", "category": "Garden"})  # merged over what the listing carried
    assert [(n.url, n.route) for n in listing.new_urls] == [
        ("http://shop.test/p/1", carried),
        ("http://shop.test/go/2", carried),
        ("http://shop.test/c/0/2", carried),
    ]
    product = run(make_page(b"<h1>Rake</h1>", url="http://shop.test/p/1", route=carried), extract=str(rules))
    assert product.items == [{"name": "Rake", "category": "Garden", "shop": "main"}]
    unrouted = run(make_page(b"<h1>Rake</h1>", url="http://shop.test/p/1"), extract=str(rules))
    assert unrouted.items == [{"name": "Rake", "category": None, "shop": "none"}]


def test_a_rules_data_must_be_a_table_of_selectors(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.replace('data = { category = "css:h1::text" }', "data = 3"))
    with pytest.raises(InputError, match=r"rules.toml:5: data must be a table of selectors"):
        load_rules(rules)


def test_a_spider_reads_the_page_bytes_as_scrapys_response_body() -> None:
    """``page.body`` (Scrapy's ``response.body``) was an AttributeError, the page's extract-error: the bytes come
    in the page's own charset with its Content-Encoding undone, for HTML, JSON and a PDF alike."""
    latin = "<html><body><h1>Caf\xe9</h1></body></html>".encode("latin-1")
    api = b'{"products": [{"name": "Rake"}]}'
    pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n%%EOF\n"
    cases = [
        (make_page(latin, content_type="text/html; charset=iso-8859-1", gzipped=True), latin),
        (make_page(api, content_type="application/json", url="http://site.example/api"), api),
        (make_page(pdf, content_type="application/pdf", url="http://site.example/a.pdf"), pdf),
    ]
    for page, body in cases:
        out = run(page, spider=_spider("BodyReader"))
        assert out.record.error is None, out.record.error_detail
        (item,) = out.items
        assert item["size"] == len(body) and item["sha1"] == hashlib.sha1(body).hexdigest(), page.lease.url
    assert run(cases[1][0], spider=_spider("BodyReader")).items[0]["json"] == {"products": [{"name": "Rake"}]}
