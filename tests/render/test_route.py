"""Which fetcher takes a URL (``fetch/route.py``), and the frontier remembering hosts that need rendering."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import new_urls, release
from webtrawl.config import CrawlConfig, Limits, RenderOptions
from webtrawl.extract.hints import RuleHints
from webtrawl.fetch.response import Response
from webtrawl.fetch.route import RenderRoute
from webtrawl.messages import Lease

SHELL = b'<html><body><div id="root"></div><script src="/app.js"></script></body></html>'


def _lease(url: str, host: str = "a.test", render: bool = False) -> Lease:
    return Lease(token="t", shard=0, host=host, url=url, render=render)


def _html(body: bytes) -> Response:
    return Response(status=200, headers=[("Content-Type", "text/html")], body=body)


def test_never_renders_nothing_and_include_renders_only_what_matches() -> None:
    assert not RenderRoute(RenderOptions(), Limits()).on
    route = RenderRoute(RenderOptions(render_include=("/app/",)), Limits())
    assert route.before(_lease("http://a.test/app/1")) == "include"
    assert route.before(_lease("http://a.test/blog/1")) == ""
    assert route.after("http://a.test/", _html(SHELL)) == ""  # not auto: a shell fetched over HTTP stays as it is


def test_always_renders_everything_before_any_http_fetch() -> None:
    assert RenderRoute(RenderOptions(render="always"), Limits()).before(_lease("http://a.test/")) == "always"


def test_auto_renders_a_shell_after_http_then_its_host_directly() -> None:
    route = RenderRoute(RenderOptions(render="auto"), Limits())
    assert route.before(_lease("http://a.test/")) == ""
    assert route.after("http://a.test/", _html(SHELL)) == "shell: empty app root"
    assert route.remember("a.test") and not route.remember("a.test")
    assert route.before(_lease("http://a.test/2")) == "host"
    assert route.before(_lease("http://b.test/", host="b.test")) == ""
    assert route.before(_lease("http://c.test/", host="c.test", render=True)) == "host"  # the frontier's flag


def test_auto_renders_a_page_its_rule_finds_no_item_in(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nurl = "shop"\nitems = "css:div.product"\nrequired = ["name"]\n'
        '[rule.fields]\nname = "css:h2::text"\nprice = "css:.price::text"\n'
    )
    cfg = CrawlConfig().with_options(render="auto", extract=str(rules))
    route = RenderRoute(cfg.rendering, cfg.limits, RuleHints.from_config(cfg.extraction, cfg.rendering))
    text = b"<p>" + b"words " * 60 + b"</p><script>x()</script>"  # not a shell: text, one small script
    found = _html(b"<html><body>" + text + b'<div class="product"><h2>Mug</h2></div></body></html>')
    empty = _html(b"<html><body>" + text + b'<div class="product"><span class="price">3</span></div></body></html>')
    assert route.after("http://a.test/shop/1", found) == ""
    assert route.after("http://a.test/shop/1", empty) == "no-items"  # its only item lacks a required field
    assert route.after("http://a.test/blog/1", empty) == ""  # no rule is for this page
    assert route.after("http://a.test/shop/1", Response(status=404, body=empty.body)) == ""


def test_the_frontier_marks_a_host_and_its_next_leases_say_render(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2", "http://b.test/1"))
    first = f.lease("n/f0", 10)
    assert not any(lease.render for lease in first)
    f.mark_render("a.test")
    release(f, first)
    again = {lease.host: lease.render for lease in f.lease("n/f0", 10)}
    assert again == {"a.test": True}
