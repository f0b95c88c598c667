"""A rules file's ``type = "int"`` / ``"float"``: the number a user sees on the page, not several glued together."""

from __future__ import annotations

from pathlib import Path

from tests.extract.helpers import run
from tests.parse.helpers import make_page


def _rules(tmp_path: Path) -> Path:
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
    return rules


def test_numbers_side_by_side_stay_apart_and_thousands_separators_still_go(tmp_path: Path) -> None:
    rules = _rules(tmp_path)
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


def test_a_decimal_comma_is_the_price_a_european_page_shows(tmp_path: Path) -> None:
    """ "€ 12,50" was 12.0 and "1.299,00 €" 1.299: the comma read as the end of the number and the dot as a decimal
    point. A comma followed by one or two digits is a decimal comma; three are still a thousands group."""
    rules = _rules(tmp_path)
    prices = ["€ 12,50", "1.299,00 €", "1\u00a0299,99 €", "12,500 units", "EUR 0,99", "$1,299.00"]
    articles = "".join(f'<article><p class="price">{p}</p><p class="sizes">{p}</p></article>' for p in prices)
    html = f"<html><body>{articles}</body></html>"
    out = run(make_page(html.encode(), url="http://shop.example/shop/mugs"), extract=str(rules))
    assert [(item["price"], item["sizes"]) for item in out.items] == [
        (12.5, 12),
        (1299.0, 1299),
        (1299.99, 1299),
        (12500.0, 12500),
        (0.99, 0),
        (1299.0, 1299),
    ]
