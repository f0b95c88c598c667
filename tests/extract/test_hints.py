"""What a fetcher takes from a rules file (``extract/hints.py``): the headers each URL's requests get, and
nothing at all (no rules loaded) when it needs nothing of them."""

from __future__ import annotations

from pathlib import Path

from webtrawl.config import ExtractionOptions, RenderOptions
from webtrawl.extract.hints import RuleHints

RULES = """
[[rule]]
url = 'shop\\.test/api/'
headers = { "X-Key" = "api", "Accept" = "application/json" }
[rule.fields]
name = "css:h1::text"

[[rule]]
url = 'shop\\.test/'
headers = { "X-Key" = "site" }
[rule.fields]
name = "css:h1::text"
"""


def test_every_matching_rule_adds_its_headers_the_first_winning_a_name(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    hints = RuleHints.from_config(
        ExtractionOptions(extract=str(rules)), RenderOptions()
    )  # no rendering: loaded for the headers alone
    assert hints is not None
    assert hints.headers("http://shop.test/api/1") == {"X-Key": "api", "Accept": "application/json"}
    assert hints.headers("http://shop.test/p/1") == {"X-Key": "site"}
    assert hints.headers("http://other.test/") == {}


def test_a_fetcher_that_needs_nothing_of_the_rules_loads_none(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nurl = "shop"\n[rule.fields]\nname = "css:h1::text"\n')
    assert RuleHints.from_config(ExtractionOptions(extract=str(rules)), RenderOptions()) is None
    assert (
        RuleHints.from_config(ExtractionOptions(extract="tests.extract.spiders:article"), RenderOptions(render="auto"))
        is None
    )  # a callback
    assert RuleHints.from_config(ExtractionOptions(extract=str(rules)), RenderOptions(render="auto")) is not None
