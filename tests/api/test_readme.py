"""The README's Python examples run as written, against the local test web's shop.

A block is one the README marks with ``<!-- run by tests/api/test_readme.py ... -->`` on the line before it. It is
saved as a script and run with ``python``; two things change so that no request leaves 127.0.0.1: the example's
``https://shop.example/`` becomes the shop's address, and the ``Crawler(`` call gets the flags that confine a crawl
to the shop (``resolve``, ``ip_allow``, ``ports``) and a short politeness delay, added to the example's own keywords.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.api.helpers import check_shop, shop_options
from tests.fixtures.shop_web import ShopWeb
from webtrawl import CrawlResult

README = Path(__file__).resolve().parents[2] / "README.md"
_MARKED = re.compile(r"<!-- run by tests/api/test_readme\.py[^>]*-->\n```python\n(.*?)```", re.DOTALL)
_EXAMPLE_SHOP = "https://shop.example/"


def readme_examples() -> list[str]:
    return _MARKED.findall(README.read_text())


def _confined(code: str, shop: ShopWeb) -> str:
    options = shop_options(shop)
    options.pop("urls")  # the example's spider has its own start URL
    calls = re.findall(r"\bCrawler\((\w+), ", code)
    assert calls and _EXAMPLE_SHOP in code, "the example no longer looks as this test expects"
    code = code.replace(_EXAMPLE_SHOP, shop.url("/"))
    confine = f"**__import__('json').loads({json.dumps(options)!r}), "
    return re.sub(r"\bCrawler\((\w+), ", lambda m: f"{m.group(0)}{confine}", code)


def test_the_readme_spider_scrapes_the_shop_and_prints_its_items(shop_web: ShopWeb, tmp_path: Path) -> None:
    [example] = readme_examples()
    script = tmp_path / "shop.py"
    script.write_text(_confined(example, shop_web))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]

    result = CrawlResult(tmp_path / "shop-crawl", _stats(done.stdout))
    check_shop(shop_web, result)  # every product once, with its category; the printed count of items is theirs
    lines = done.stdout.splitlines()
    products = sorted(f"{shop_web.category_of[i['url']]} {i['fields']['name']}" for i in result.items())
    assert sorted(line.rsplit(" ", 1)[0] for line in lines[1:]) == products
    assert all(i["fields"]["price"] == float(f"{int(i['url'].rsplit('/', 1)[1]) % 97}.99") for i in result.items())


def _stats(stdout: str) -> dict[str, int]:
    """The counters the example printed on its first line: '<fetched> pages fetched, <items> items'."""
    found = re.match(r"(\d+) pages fetched, (\d+) items\n", stdout)
    assert found, stdout[:500]
    return {"fetched": int(found.group(1)), "items": int(found.group(2))}
