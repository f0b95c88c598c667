"""Selectors of a rules file on a page: ``jsonld:<path>`` paths with list positions, ``follow`` run by parsel."""

from __future__ import annotations

from pathlib import Path

from tests.extract.helpers import run
from tests.parse.helpers import make_page

_PRODUCT = b"""<html><head><script type="application/ld+json">
{"@type": "Product", "name": "Mug", "offers": [{"price": "12.50", "seller": {"name": "A"}},
 {"price": "13", "seller": {"name": "B"}}], "image": ["a.jpg", "b.jpg", "c.jpg"]}
</script></head><body><h1>Mug</h1></body></html>"""


def test_a_jsonld_path_picks_a_list_member_by_its_position(tmp_path: Path) -> None:
    rules = tmp_path / "r.toml"
    rules.write_text(
        """
[[rule]]
url = "/p/"
[rule.fields]
first = { jsonld = "Product.offers.0.price", type = "float" }
second = { jsonld = "Product.offers.1.seller.name" }
third_image = "jsonld:Product.image.2"
past_the_end = { jsonld = "Product.offers.5.price", default = "none" }
every_price = { jsonld = "Product.offers.price", all = true }
"""
    )
    out = run(make_page(_PRODUCT, url="http://shop.example/p/1"), extract=str(rules))
    assert out.record.error is None, out.record.error_detail
    assert out.items == [
        {
            "first": 12.5,
            "second": "B",
            "third_image": "c.jpg",
            "past_the_end": "none",
            "every_price": ["12.50", "13"],  # without a position a list's members are all walked, as before
        }
    ]


def test_a_follow_selector_on_lxml_takes_hrefs_only_never_an_elements_html(tmp_path: Path) -> None:
    """``follow`` run by parsel (an XPath with a position) on a link without attributes queued its HTML,
    ``<a>next</a>``, as a URL; with attributes but no href it was skipped (as lexbor's path does)."""
    rules = tmp_path / "r.toml"
    rules.write_text(
        """
[[rule]]
url = "/c/"
follow = "xpath://ul/li[position() <= 3]/a"
[rule.fields]
title = "css:h1::text"
"""
    )
    html = b"""<html><body><h1>Cat</h1><ul><li><a href="/p/1">1</a></li><li><a>next</a></li>
<li><a class="x">x</a></li></ul></body></html>"""
    out = run(make_page(html, url="http://shop.example/c/1"), extract=str(rules))
    assert [n.url for n in out.new_urls] == ["http://shop.example/p/1"]
