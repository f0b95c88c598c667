"""The public names of ``webtrawl`` (what code is written against) are pinned, and importing them is cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import webtrawl

PUBLIC = [
    "CloseSpider",
    "ConfigError",
    "CrawlResult",
    "CrawlSpider",
    "Crawler",
    "Follow",
    "InputError",
    "LinkExtractor",
    "Page",
    "Rule",
    "Spider",
    "StateError",
    "WebtrawlError",
    "__version__",
]
HEAVY = ("aiohttp", "redis", "msgspec", "selectolax", "parsel", "lxml", "rich", "uvloop", "warcio", "playwright")


def test_exported_members() -> None:
    """As httpx's test: the list is what we promise; a name added or dropped is a decision, made here."""
    assert webtrawl.__all__ == PUBLIC
    for name in PUBLIC:
        value = getattr(webtrawl, name)
        assert name == "__version__" or value.__name__ == name
        assert name == "__version__" or value.__module__.startswith("webtrawl.")
    assert issubclass(webtrawl.ConfigError, ValueError) and issubclass(webtrawl.ConfigError, webtrawl.WebtrawlError)


def _modules_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return {name.split(".")[0] for name in json.loads(done.stdout)}


def test_importing_webtrawl_or_the_crawler_loads_no_stage() -> None:
    """``import webtrawl`` is what every process of a crawl pays, ``from webtrawl import Crawler`` what a program
    embedding one pays before it crawls: neither loads the HTTP client, Redis, the parsers or the console."""
    assert _modules_after("import webtrawl") & {*HEAVY, "webtrawl"} == {"webtrawl"}
    assert _modules_after("import webtrawl; webtrawl.__version__").isdisjoint(HEAVY)
    assert _modules_after("from webtrawl import Crawler, ConfigError").isdisjoint(HEAVY)
