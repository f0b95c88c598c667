"""Crawler keywords read as the command line's flags."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.extract.shop import ShopSpider
from webtrawl import ConfigError, Crawler


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"spider_arg": {"category": None}}, "--spider-arg category: None is not a value (leave 'category' out"),
        ({"header": {"Authorization": None}}, "--header Authorization: None is not a value"),
    ],
)
def test_a_none_in_a_dict_option_is_refused_not_sent_as_the_text_none(
    option: dict[str, Any], message: str, tmp_path: Path
) -> None:
    """``header={"Authorization": os.environ.get("TOKEN")}`` with TOKEN unset sent ``Authorization: None``, and a
    spider argument of None was the string "None" on the spider."""
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        Crawler(ShopSpider, out=tmp_path / "crawl", **option)
    crawler = Crawler(ShopSpider, out=tmp_path / "crawl", spider_arg={"pages": 2}, header={"X-N": 1})
    assert crawler.config.extraction.spider_arg == ("pages=2",)  # other values as their text, as before
    assert not (tmp_path / "crawl").exists()
