"""Start-up of a node over an output directory a killed process left behind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.node.crawlrun import Crawl
from webtrawl_testweb import TestWeb


def test_open_files_of_every_output_stream_are_sealed_at_start_up(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(2, 3)
    out = tmp_path / "crawl"
    lines = [{"url": f"https://x.test/{i}", "reason": "scope", "parent": "https://x.test/", "depth": 1} for i in (1, 2)]
    whole = "".join(json.dumps(line) + "\n" for line in lines)
    left = {
        sub: out / sub / "local-p0-00000.jsonl.open" for sub in ("dropped", "records")
    }  # what a parser killed mid-write leaves: whole lines, then half of one
    for path in left.values():
        path.parent.mkdir(parents=True)
        path.write_text(whole + '{"url": "https://x.test/3", "rea')

    crawl = Crawl(out, [*web.seeds(1), *web.crawl_args(), "--max-pages", "2", "--fetchers", "1", "--parsers", "1"])
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    for path in left.values():
        assert not path.exists()
        assert path.with_name("local-p0-00000.jsonl").read_text() == whole  # cut to its last whole line, renamed
