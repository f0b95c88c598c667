"""A rules file's ``type = "int"`` / ``"float"``: the number a user sees on the page, not several glued together."""

from __future__ import annotations

from pathlib import Path

from tests.extract.helpers import run
from tests.parse.helpers import make_page


def test_numbers_side_by_side_stay_apart_and_thousands_separators_still_go(tmp_path: Path) -> None:
    rules = tmp_path / "shop.toml"
    rules.write_text(
        """
[[rule]]
url = "/shop/"
items = "css:article"
[rule.fields]
price = { css = ".price::text", type = "float" }
sizes = { css = ".sizes::text", type = "int" }
reviews = { css = ".reviews::text", type = "int" }
"""
    )
    html = """<html><body>
<article><p class="price">12.99 9.99</p><p class="sizes">42 43 44</p><p class="reviews">(1 234 reviews)</p></article>
<article><p class="price">$1,299.00</p><p class="sizes">10, 12</p><p class="reviews">12\u00a0345\u00a0678</p></article>
<article><p class="price">1'299.50 CHF</p><p class="sizes">Size 8 - 10</p><p class="reviews">2,5,7</p></article>
</body></html>""".encode()
    out = run(make_page(html, url="http://shop.example/shop/mugs"), extract=str(rules))
    assert out.items == [
        {"price": 12.99, "sizes": 42, "reviews": 1234},  # was 12.999 and 424344: the space taken for a separator
        {"price": 1299.0, "sizes": 10, "reviews": 12345678},  # was sizes 1012
        {"price": 1299.5, "sizes": 8, "reviews": 2},  # was reviews 257
    ]
