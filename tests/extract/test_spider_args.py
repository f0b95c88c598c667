"""Spider arguments (``--spider-arg NAME=VALUE``, ``spider_arg=`` in Python): Scrapy's ``scrapy crawl shop -a
category=Books`` set an attribute the spider reads; webtrawl had no way to give a spider anything at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extract.helpers import run
from tests.parse.helpers import make_page
from webtrawl.config import load
from webtrawl.errors import ConfigError, InputError
from webtrawl.extract import load_spider
from webtrawl.extract.routing import decode_route

SPIDER = f"{Path(__file__).with_name('shop.py')}:CategoryShop"
HOME = b"<a class=cat href=/c/0/1>Garden</a><a class=cat href=/c/1/1>Books</a>"


def test_a_spider_argument_is_an_attribute_of_the_spider_its_callbacks_read() -> None:
    assert load_spider(SPIDER, ["category=Books", "note=a=b"]).spider.note == "a=b"  # type: ignore[attr-defined]
    out = run(make_page(HOME, url="http://shop.test/"), spider=SPIDER, spider_arg=("category=Books",))
    assert [(n.url, decode_route(n.route)) for n in out.new_urls] == [
        ("http://shop.test/c/1/1", ("parse_listing", {"category": "Books"}))
    ]


def test_a_spider_argument_that_would_replace_a_method_is_refused_at_start() -> None:
    with pytest.raises(InputError, match=r"^--spider-arg parse: CategoryShop.parse is a method"):
        load_spider(SPIDER, ["parse=x"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"spider": SPIDER, "spider_arg": ["category"]}, "--spider-arg: not NAME=VALUE"),
        ({"spider": SPIDER, "spider_arg": ["_secret=x"]}, "--spider-arg: not NAME=VALUE"),
        ({"extract": "x.toml", "spider_arg": ["category=Books"]}, "--spider-arg needs --spider"),
    ],
)
def test_a_bad_spider_argument_is_one_clear_error(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(flags)
