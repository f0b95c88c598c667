"""One crawl of JS web hosts with every page rendered, shared by the render tests that read its records and the test
web's access log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.node.crawlrun import Crawl, records
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.jsweb import JsWeb


@dataclass
class Result:
    web: JsWeb
    rows: dict[str, dict[str, Any]]  # url -> its record
    entries: list[LogEntry]  # the JS web's access log during the crawl
    trap_hits: int  # connections to the trap address (127.0.0.2) during the crawl


def render_crawl(out: Path, web: JsWeb, hosts: list[str], extra: list[str], wait_s: float) -> Result:
    """Crawl ``hosts`` (depth 1) with ``--render always`` and ``extra``; every URL recorded once."""
    mark, trapped = web.log.mark(), len(web.trap_hits)
    args = [*web.crawl_args("127.0.0.1/32"), "--delay", "0.1", "--fetchers", "1", "--parsers", "1"]
    args += ["--render", "always", "--renderers", "2", "--max-depth", "1", *extra]
    crawl = Crawl(out, [*(web.url(host) for host in hosts), *args])
    assert crawl.wait(wait_s) == 0, crawl.log()[-4000:]
    rows = records(out)
    assert len(rows) == len({row["url"] for row in rows}), "one record per URL"
    return Result(web, {row["url"]: row for row in rows}, web.entries(since=mark), len(web.trap_hits) - trapped)
