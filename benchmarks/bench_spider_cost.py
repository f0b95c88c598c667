"""What a spider's routing costs per page (issue 19): the parser's CPU, and the frontier's bytes per queued URL.

Parser side: the parser's real page processing (``process_page``, as bench_extract_cost.py) over the 181 corpus
pages for four variants, alternating round by round: ``plain`` (links only), ``callback`` (an ``--extract``
function yielding 5 fields read with ``page.css()`` and ``Follow(url)`` for each ``a[href]``), ``spider`` (a
Spider whose ``parse`` yields the same item and the same plain ``Follow(url)``) and ``routed`` (the same Spider
yielding ``Follow(url, callback="parse_detail", data={"listing": page.url, "category": <h1>})``). Medians of the
rounds, ms of process CPU time per page.

Frontier side: the URLs the ``routed`` variant emits, added to a real redis-server (the embedded one the crawler
starts) once without their routes and once with them (each into an empty database): Redis's ``used_memory`` per
queued URL and the difference, against the mean route length.

    PYTHONPATH=src:testweb/src python benchmarks/bench_spider_cost.py [--rounds N] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_extract import _round
from bench_parse import _DEFAULT_CORPUS, load_pages, make_context

from webtrawl.config import ExtractionOptions
from webtrawl.extract import build_extraction
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.messages import NewUrl, Page
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.parse import ParseContext, process_page

_CODE = """
from webtrawl.extract import Follow, Spider


def _item(page):
    return {
        "title": page.css("title::text").get(),
        "headline": page.css("h1 ::text").get(),
        "image": page.css("meta[property='og:image']::attr(content)").get(),
        "canonical": page.css("link[rel=canonical]::attr(href)").get(),
        "first_paragraph": page.css("article p::text").get(),
    }


def callback(page):
    yield _item(page)
    for url in page.css("a::attr(href)").getall():
        yield Follow(url)


class Plain(Spider):
    def parse(self, page):
        yield _item(page)
        for url in page.css("a::attr(href)").getall():
            yield Follow(url)


class Routed(Spider):
    def parse(self, page):
        item = _item(page)
        yield item
        data = {"listing": page.url, "category": item["headline"]}
        for url in page.css("a::attr(href)").getall():
            yield Follow(url, callback="parse_detail", data=data)

    parse_detail = parse
"""
_VARIANTS: dict[str, dict[str, str]] = {
    "plain": {},
    "callback": {"extract": "callback"},
    "spider": {"spider": "Plain"},
    "routed": {"spider": "Routed"},
}
_SETTINGS = {"shards": 4, "expected_urls": 100_000, "prefix": "bench"}


def _context(how: dict[str, str], code: Path) -> ParseContext:
    ctx = make_context()
    if "extract" in how:
        ctx.extraction = build_extraction(ExtractionOptions(extract=f"{code}:{how['extract']}"))
    elif "spider" in how:
        ctx.extraction = build_extraction(ExtractionOptions(spider=f"{code}:{how['spider']}"))
    return ctx


def _parser_side(pages: list[Page], rounds: int, code: Path) -> list[NewUrl]:
    contexts = {name: _context(how, code) for name, how in _VARIANTS.items()}
    for ctx in contexts.values():
        _round(pages[:20], ctx)  # warm-up: lazy imports, caches
    times: dict[str, list[float]] = {name: [] for name in _VARIANTS}
    for _ in range(rounds):
        for name, ctx in contexts.items():
            times[name].append(1000 * _round(pages, ctx)[0] / len(pages))
    outputs = {name: [process_page(page, ctx) for page in pages] for name, ctx in contexts.items()}
    base = statistics.median(times["callback"])
    for name, samples in times.items():
        ms = statistics.median(samples)
        links = sum(len(out.new_urls) for out in outputs[name]) / len(pages)
        extra = f", {ms - base:+.3f} ms ({100 * (ms - base) / base:+.0f}%) vs callback" if name != "callback" else ""
        print(
            f"{name:>9}: {ms:.3f} ms CPU/page (median of {len(samples)}, range {min(samples):.3f}-{max(samples):.3f})"
            f", {links:.1f} links queued/page{extra}"
        )
    return [url for out in outputs["routed"] for url in out.new_urls]


def _memory_per_url(url: str, urls: list[NewUrl]) -> float:
    client = connect_sync(url)
    try:
        client.flushdb()
        before = int(client.info("memory")["used_memory"])
        frontier = RedisFrontier.open(client, FrontierSettings(**_SETTINGS))  # type: ignore[arg-type]
        for i in range(0, len(urls), 500):
            frontier.add(urls[i : i + 500])
        return (int(client.info("memory")["used_memory"]) - before) / len(urls)
    finally:
        client.flushdb()
        client.close()


def _frontier_side(routed: list[NewUrl]) -> None:
    unique = list({u.url: u for u in routed}.values())
    populations = {
        "without route": [NewUrl(u.url, u.depth) for u in unique],
        "callback name only": [NewUrl(u.url, u.depth, route=u.route.partition("{")[0]) for u in unique],
        "with route": unique,
    }
    routes = [len(u.route.encode()) for u in unique]
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            sizes: dict[str, list[float]] = {name: [] for name in populations}
            for _ in range(3):
                for name, urls in populations.items():
                    sizes[name].append(_memory_per_url(server.url, urls))
        finally:
            server.stop()
    print(
        f"frontier: {len(unique)} URLs, route mean {statistics.mean(routes):.1f} B (median "
        f"{statistics.median(routes):.0f}); Redis used_memory per queued URL, median of 3:"
    )
    plain = statistics.median(sizes["without route"])
    for name, samples in sizes.items():
        print(f"  {name:>18}: {statistics.median(samples):.1f} B (+{statistics.median(samples) - plain:.1f} B)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    args = ap.parse_args(argv)
    pages = load_pages(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        code = Path(tmp) / "bench_spiders.py"
        code.write_text(_CODE)
        routed = _parser_side(pages, args.rounds, code)
    _frontier_side(routed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
