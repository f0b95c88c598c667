"""Pages per second of ``process_page`` in one process, on the 181 real corpus pages.

Each page is handed over the way a fetcher would: the gzip body exactly as served, ``Content-Encoding: gzip``,
``Content-Type: text/html`` (no charset, so the meta prescan / detection path runs as on most of the web).

    .venv/bin/python benchmarks/bench_parse.py [--rounds N] [--profile] [--corpus DIR] [--web [--pages N]]

``--web`` measures the path of ``trawl bench`` instead: the pages as its test web serves them (identity bodies,
the corpus page's charset in Content-Type, the model's links injected before ``</body>``, URLs ``site<i>.test``)
and the parser context the crawl builds (``--include`` the model's URLs, ``--ip-allow``/``--ports`` of the test
web, the trap guard), so nearly all ~140 corpus links per page are refused by the include regex.

``--profile`` runs one round under cProfile and prints the top functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

from webtrawl.config import CrawlConfig, Limits, Politeness
from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.formats import canonicalize
from webtrawl.messages import Lease, Page
from webtrawl.parse import ParseContext, Scope, process_page
from webtrawl.parse.worker import build_context
from webtrawl_bench.spec import MODEL_URLS
from webtrawl_bench.testweb_proc import WebSpec
from webtrawl_testweb.corpus import Corpus
from webtrawl_testweb.model import WebModel, WebOptions
from webtrawl_testweb.pages import link_block

_DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def load_pages(corpus: Path) -> list[Page]:
    pages = []
    for line in (corpus / "urls.tsv").read_text().splitlines()[1:]:
        page_id, url = line.split("\t", 1)
        body = (corpus / "pages" / f"{page_id}.html.gz").read_bytes()
        url = canonicalize(url)
        lease = Lease(token=f"bench.0.{page_id[:8]}", shard=0, host=url.split("/")[2], url=url, depth=1)
        pages.append(
            Page(
                lease=lease,
                status=200,
                reason="OK",
                headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Server", "bench")],
                body=body,
                request_headers=[
                    ("Host", lease.host),
                    ("User-Agent", "webtrawl/0.1"),
                    ("Accept-Encoding", "gzip"),
                ],
                ip="127.0.0.1",
                fetch_time=time.time(),
                elapsed_ms=12.5,
            )
        )
    return pages


_WEB_PORTS = (8080, 8443)  # any non-default ports: the model's URLs then carry them, as in the bench


def load_web_pages(corpus: Path, count: int) -> list[Page]:
    """The first ``count`` corpus-backed pages of the bench's test web, served the way its server does."""
    spec = WebSpec()
    real = Corpus(corpus)
    options = WebOptions(min_pages=spec.min_pages, max_pages=spec.max_pages, corpus_fraction=spec.corpus_fraction)
    model = WebModel(
        spec.hosts, spec.seed, http_port=_WEB_PORTS[0], https_port=_WEB_PORTS[1], options=options, corpus_size=len(real)
    )
    pages: list[Page] = []
    for host in model.hosts():
        for k in range(host.n_pages):
            page = model.page(host.index, k)
            if page.corpus is None:
                continue
            cp = real.get(page.corpus)
            lease = Lease(token=f"bench.0.{len(pages)}", shard=0, host=host.name, url=page.url, depth=2)
            pages.append(
                Page(
                    lease=lease,
                    status=200,
                    reason="OK",
                    headers=[("Content-Type", cp.content_type), ("Server", "bench")],
                    body=cp.head + link_block(page) + cp.tail,
                    request_headers=[("Host", lease.host), ("User-Agent", "webtrawl/0.1")],
                    ip="127.0.0.1",
                    fetch_time=time.time(),
                    elapsed_ms=12.5,
                )
            )
            if len(pages) >= count:
                return pages
    return pages


def make_web_context() -> ParseContext:
    """What the parser of a ``trawl bench`` crawl builds (see webtrawl_bench.crawl_run and testweb.serve)."""
    cfg = CrawlConfig().with_options(include=[MODEL_URLS], ip_allow=["127.0.0.0/8"], ports=list(_WEB_PORTS))
    return build_context(
        ["http://site0.test:8080/"],
        fetch=cfg.fetch,
        limits=cfg.limits,
        politeness=cfg.politeness,
        discovery=cfg.discovery,
        extraction=cfg.extraction,
    )


def make_context() -> ParseContext:
    return ParseContext(
        limits=Limits(),
        politeness=Politeness(),
        product_token="webtrawl",
        scope=Scope("any", [], [], []),
        url_allowed=AddressPolicy([], []).url_allowed,
    )


def run_round(pages: list[Page], ctx: ParseContext) -> tuple[float, float, int]:
    """(wall s, CPU s, links kept): CPU time is what a parser process costs on a shared machine."""
    links = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for page in pages:
        links += len(process_page(page, ctx).new_urls)
    return time.perf_counter() - wall, time.process_time() - cpu, links


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    ap.add_argument("--web", action="store_true", help="the pages and scope of trawl bench (see above)")
    ap.add_argument("--pages", type=int, default=362, help="with --web: how many test web pages")
    args = ap.parse_args(argv)
    pages = load_web_pages(args.corpus, args.pages) if args.web else load_pages(args.corpus)
    ctx = make_web_context() if args.web else make_context()
    run_round(pages, ctx)  # warm-up: caches, lazy imports
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run_round(pages, ctx)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(25)
        return 0
    best_wall = best_cpu = float("inf")
    links = 0
    for _ in range(args.rounds):
        wall, cpu, links = run_round(pages, ctx)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    mb = sum(len(p.body) for p in pages) / 1e6
    kind = "identity, trawl bench scope" if args.web else "gzip"
    print(
        f"process_page: {len(pages) / best_cpu:.0f} pages/s per process by CPU time "
        f"({1000 * best_cpu / len(pages):.3f} ms/page), {len(pages) / best_wall:.0f} by wall clock (best of "
        f"{args.rounds} rounds over {len(pages)} pages, {mb:.1f} MB {kind}, {links} links kept per round)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
