"""Client CPU per page of the fetcher's own path: HttpClient GET + framing the Page for a parser.

    python benchmarks/bench_fetch_cost.py [--requests 600] [--rounds 5] [--hosts 100] [--new 0.3] [--tls12]
        [--big 0.01] [--only frame]

A server process (aiohttp on uvloop, HTTPS via the test web's CA with SNI for ``site<i>.test``, and HTTP) serves
the 181 corpus pages (/work/shared/corpus, gzip-encoded as received). A drain process reads and drops what the
fetcher frames (a unix socket like a parser's). This process fetches ``--requests`` pages over ``--hosts`` host
names (85% HTTPS) with 16 in flight; before a ``--new`` share of the requests the host's idle connection is closed,
so that request opens a new connection (a host session coming back after its keep-alive, as in a broad crawl);
a ``--big`` share asks for a 12 MB body instead (the realistic test web's 1%: cut at the 10 MiB cap). Each
page goes through pagesend's PageSender. Variants alternate in rounds; reported: median CPU ms per page (user+sys
of this process) and the part spent encoding + writing frames.

``--tls-read`` compares instead the fetcher's TLS read (a record at most per call, ``after``) with CPython's
``SSLObject.read`` (``before``). The fetching process sets its heap and collector as a fetcher process does
(heap.py: glibc's mmap threshold, trim threshold and top pad; fewer GC passes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import inspect
import multiprocessing
import random
import resource
import socket
import ssl
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvloop
from aiohttp import web

from webtrawl import pagesend
from webtrawl.config import CrawlConfig
from webtrawl.fetch import HttpClient
from webtrawl.fetch import client as client_module
from webtrawl.heap import collect_less, return_freed_buffers
from webtrawl.messages import PAGE_ENCODER, Lease, Page
from webtrawl_testweb.certs import Certs

CORPUS = Path("/work/shared/corpus/pages")
_PARTS = "parts" in inspect.signature(HttpClient.fetch).parameters


def _serve(cert_dir: Path, tls12: bool, ports: Any) -> None:
    bodies = [gzip.compress(gzip.decompress(p.read_bytes()), 6) for p in sorted(CORPUS.glob("*.html.gz"))]

    async def page(request: web.Request) -> web.Response:
        body = bodies[int(request.match_info["i"]) % len(bodies)]
        return web.Response(body=body, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})

    big = random.Random(2).randbytes(12 * 1024 * 1024)  # a 12 MB answer (cut at the 10 MiB --max-body)

    async def big_page(request: web.Request) -> web.Response:
        return web.Response(body=big, headers={"Content-Type": "application/octet-stream"})

    async def main() -> None:
        ctx = Certs(cert_dir).server_context
        if tls12:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        app = web.Application()
        app.router.add_get("/p/{i}", page)
        app.router.add_get("/big/{i}", big_page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx).start()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        ports.extend([int(a[1]) for a in runner.addresses])  # a list: a manager's proxy pickles it
        await asyncio.Event().wait()

    uvloop.run(main())


def client_config(tmp: Path, https: int, http: int) -> CrawlConfig:
    """A fetcher's settings for the bench server of :func:`_serve` (its CA under ``tmp/certs``)."""
    return CrawlConfig().with_options(
        ip_allow=["127.0.0.0/8"],
        resolve=["*.test=127.0.0.1"],
        ports=[https, http],
        ca_file=tmp / "certs" / "ca.pem",
        connect=10.0,
        total=60.0,
    )


def _drain(path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    while True:
        conn, _ = listener.accept()
        with conn:
            while conn.recv(1 << 20):
                pass


def _legacy_frame(page: Page) -> tuple[bytearray, bytes]:
    """The frame before this work: the whole page (body included) encoded behind its length, one buffer."""
    frame = bytearray(8)
    PAGE_ENCODER.encode_into(page, frame, 8)
    return frame, b""  # one buffer (an empty write after it is a no-op); the drain does not parse


class _ResumingContext(ssl.SSLContext):
    """TLS session resumption at its cheapest from Python: each new connection to a host offers the session of
    the host's previous connection, read once per connection (CPython's ``SSLObject.session`` getter and setter
    both copy the session through i2d/d2i, parsing the peer certificate: ~0.2 ms each on this machine)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.last: dict[str, ssl.SSLObject] = {}

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        host = str(server_hostname)
        previous = self.last.get(host)
        if previous is not None:
            with contextlib.suppress(ValueError):  # that connection's handshake did not finish
                session = previous.session
        obj = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        self.last[host] = obj
        return obj


@contextlib.contextmanager
def _variant(resume: bool, split_frame: bool, frame_cpu: list[float], plain_read: bool = False) -> Iterator[None]:
    names = vars(client_module)  # HttpClient calls the ssl_context it imported: replaced there
    make_context = names["ssl_context"]
    frame = pagesend.frame
    build: Callable[[Page], tuple[Any, Any]] = _legacy_frame

    def timed(page: Page, *parts: Any) -> tuple[Any, Any]:
        start = time.process_time()
        out = frame(page, *parts) if split_frame else build(page)
        frame_cpu[0] += time.process_time() - start
        return out

    def resuming(fetch: Any) -> ssl.SSLContext:
        ctx = _ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.sslobject_class = make_context(fetch).sslobject_class
        assert fetch.ca_file is not None
        ctx.load_verify_locations(cafile=str(fetch.ca_file))
        return ctx

    def plain_reading(fetch: Any) -> ssl.SSLContext:
        ctx = make_context(fetch)
        ctx.sslobject_class = type("PlainRead", (ctx.sslobject_class,), {"read": ssl.SSLObject.read})
        return ctx

    if resume:
        names["ssl_context"] = resuming
    elif plain_read:
        names["ssl_context"] = plain_reading
    pagesend.frame = timed
    try:
        yield
    finally:
        names["ssl_context"] = make_context
        pagesend.frame = frame


def _forget(client: HttpClient, host: str) -> None:
    """Close the idle connections to ``host``: its next request connects anew."""
    conns = client._idle_pool() or {}
    for key in [k for k in conns if k.host == host]:
        for proto, _ in conns.pop(key):
            proto.abort()


async def _round(cfg: CrawlConfig, sock: Path, urls: list[tuple[str, str, bool]]) -> tuple[float, int, int]:
    sem = asyncio.Semaphore(16)
    done = 0
    async with HttpClient(cfg.fetch, cfg.limits) as client:
        sender = pagesend.PageSender([sock])

        async def one(host: str, url: str, new: bool) -> None:
            nonlocal done
            async with sem:
                if new:
                    _forget(client, host)
                lease = Lease(token="t", shard=0, host=host, url=url)
                if _PARTS:  # the fetcher's page path: the body left in its chunks (HttpFetcher)
                    resp = await client.fetch(url, parts=True)
                    page = Page(lease=lease, status=resp.status, headers=resp.headers, body=resp.body, ip=resp.ip)
                    await sender.send(page, resp.body_parts)
                else:  # a tree from before body parts (an A/B against main)
                    resp = await client.fetch(url)
                    page = Page(lease=lease, status=resp.status, headers=resp.headers, body=resp.body, ip=resp.ip)
                    await sender.send(page)
                done += 1

        start, faults = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        await asyncio.gather(*(one(*u) for u in urls))
        cpu = time.process_time() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        await sender.close()
    return cpu, done, faults


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--new", type=float, default=0.3)
    ap.add_argument("--big", type=float, default=0.0, help="share of requests for a 12 MB body (realistic: 0.01)")
    ap.add_argument("--tls12", action="store_true", help="the server speaks TLS 1.2 at most")
    ap.add_argument("--tls-read", action="store_true", help="CPython's SSLObject.read (before) vs the fetcher's")
    ap.add_argument(
        "--only", help="run only this variant: 'frame' is the fetcher as shipped (alternate trees for an A/B)"
    )
    args = ap.parse_args()
    variants = {"before": (False, False), "resume": (True, False), "frame": (False, True), "after": (True, True)}
    if args.only:
        variants = {args.only: variants[args.only]}
    if args.tls_read:
        variants = {"before": (False, True), "after": (False, True)}
    with tempfile.TemporaryDirectory() as tmp, multiprocessing.Manager() as manager:
        ports = manager.list()
        server = multiprocessing.Process(target=_serve, args=(Path(tmp) / "certs", args.tls12, ports), daemon=True)
        server.start()
        sock = Path(tmp) / "drain.sock"
        drain = multiprocessing.Process(target=_drain, args=(sock,), daemon=True)
        drain.start()
        return_freed_buffers()  # this process's heap as a fetcher's (after the forks: not the server's)
        collect_less()
        while len(ports) < 2 or not sock.exists():
            if not server.is_alive():
                raise SystemExit("bench_fetch_cost: the server process died")
            time.sleep(0.05)
        https, http = ports[0], ports[1]
        cfg = client_config(Path(tmp), https, http)
        rng = random.Random(1)
        urls = []
        for i in range(args.requests):
            host = f"site{rng.randrange(args.hosts)}.test"
            path = f"/big/{i}" if rng.random() < args.big else f"/p/{i}"
            url = f"https://{host}:{https}{path}" if rng.random() < 0.85 else f"http://{host}:{http}{path}"
            urls.append((host, url, rng.random() < args.new))
        per_page: dict[str, list[float]] = {v: [] for v in variants}
        frame_ms: dict[str, list[float]] = {v: [] for v in variants}
        faults_pp: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for name, (resume, split) in variants.items():
                frame_cpu = [0.0]
                with _variant(resume, split, frame_cpu, plain_read=args.tls_read and name == "before"):
                    cpu, done, faults = uvloop.run(_round(cfg, sock, urls))
                per_page[name].append(cpu / done * 1000)
                faults_pp[name].append(faults / done)
                frame_ms[name].append(frame_cpu[0] / done * 1000)
        server.kill()
        drain.kill()
    print(
        f"{args.requests} requests x {args.rounds} rounds, {args.hosts} hosts, new {args.new:.0%}, "
        f"{args.big:.0%} 12 MB bodies, server {'TLS 1.2' if args.tls12 else 'TLS 1.3'}"
    )
    for name in variants:
        runs = ", ".join(f"{x:.3f}" for x in per_page[name])
        print(
            f"{name:7} {statistics.median(per_page[name]):.3f} ms CPU/page ({runs}); "
            f"frame encode {statistics.median(frame_ms[name]):.3f} ms/page; "
            f"{statistics.median(faults_pp[name]):.1f} page faults/page"
        )


if __name__ == "__main__":
    main()
