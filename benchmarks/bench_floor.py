"""The compiled floor of a page: what the C libraries alone cost per page of the realistic bench (issue 21).

    .venv/bin/python benchmarks/bench_floor.py [--bench-json F] [--rounds 5] [--corpus DIR]

Each piece of work a crawled page needs and that already runs in C (OpenSSL, the kernel, lexbor, ISA-L, SHA-1,
Redis) is timed alone, with as little Python around it as the measurement allows, on the 181 corpus pages, and
weighted by the rates of one ``trawl bench --web realistic`` run (``--bench-json``: new connections, HTTPS share,
bytes and robots.txt per page; without it the issue's real-web rates). The sum is the CPU a page would cost if
all of webtrawl's own Python (the event loop's callbacks, aiohttp, framing, link handling, the WARC and JSONL
records, the Redis client) cost nothing; the bench's measured node CPU minus it is what Python costs.

Measured here, each the median of ``--rounds`` rounds of CPU time of the thread doing the work:
- ``tls-handshake``: a client handshake (certificate chain verified against the test web's trustme CA, X25519,
  TLS 1.3) over memory BIOs; the server's half is timed apart and not counted.
- ``tls-read``: decrypting the page's bytes (16 KiB records, AES-GCM as negotiated) over memory BIOs.
- ``tcp-connect``: a non-blocking TCP connect to a loopback listener and its close, client side.
- ``recv``: receiving the bytes on loopback TCP into a reused buffer (the sender is another process).
- ``pipe``: a fetcher handing a page to a parser over a Unix socket, both sides (send + recv_into).
- ``parse``: lexbor's parse of the page and its CSS query for the link-bearing tags (no per-node Python).
- ``warc``: ISA-L level-1 gzip of the record, SHA-1 of the block and of the payload.
- ``redis``: taken as measured by the bench (the server is C already, scripts included).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import multiprocessing
import socket
import ssl
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import trustme
from isal import isal_zlib
from selectolax.lexbor import LexborHTMLParser

_DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
_QUERY = "a[href], area[href], link[href], base[href], meta, img[src], script[src], iframe[src], frame[src]"
_RECORD = 16 * 1024
# The issue's real-web rates per page, used without --bench-json (14,000 pages of 18,500 requests in 60 s).
_REAL = {"requests": 1.32, "new_connections": 0.30, "https": 0.80, "bytes": 190_000.0, "redis_ms": 1.0}


def _pages(corpus: Path) -> list[bytes]:
    out = []
    for line in (corpus / "urls.tsv").read_text().splitlines()[1:]:
        page_id = line.split("\t", 1)[0]
        out.append(gzip.decompress((corpus / "pages" / f"{page_id}.html.gz").read_bytes()))
    return out


def _median(rounds: int, one: Callable[[], float]) -> float:
    return statistics.median(one() for _ in range(rounds))


def _tls_pair(ca: trustme.CA) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("site1.test").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return client, server


def _pump(src: ssl.MemoryBIO, dst: ssl.MemoryBIO) -> None:
    data = src.read()
    if data:
        dst.write(data)


def tls_handshake(rounds: int, n: int = 200) -> float:
    """Client CPU seconds per handshake."""
    client_ctx, server_ctx = _tls_pair(trustme.CA())

    def one() -> float:
        spent = 0.0
        for _ in range(n):
            c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
            client = client_ctx.wrap_bio(c_in, c_out, server_hostname="site1.test")
            server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
            done_c = done_s = False
            while not (done_c and done_s):
                if not done_c:
                    t = time.thread_time()
                    try:
                        client.do_handshake()
                        done_c = True
                    except ssl.SSLWantReadError:
                        pass
                    spent += time.thread_time() - t
                _pump(c_out, s_in)
                if not done_s:
                    try:
                        server.do_handshake()
                        done_s = True
                    except ssl.SSLWantReadError:
                        pass
                _pump(s_out, c_in)
        return spent / n

    return _median(rounds, one)


def tls_read(rounds: int, pages: list[bytes]) -> float:
    """Client CPU seconds per byte decrypted."""
    client_ctx, server_ctx = _tls_pair(trustme.CA())
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="site1.test")
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side, out, into in ((client, c_out, s_in), (server, s_out, c_in)):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
            _pump(out, into)
    buf = bytearray(256 * 1024)
    total = sum(map(len, pages))

    def one() -> float:
        spent = 0.0
        for page in pages:
            for at in range(0, len(page), _RECORD):
                server.write(page[at : at + _RECORD])
            c_in.write(s_out.read())
            t = time.thread_time()
            while c_in.pending:
                client.read(len(buf), buf)
            spent += time.thread_time() - t
        return spent / total

    return _median(rounds, one)


def tcp_connect(rounds: int, n: int = 500) -> float:
    """Client CPU seconds per loopback TCP connect + close (the listener's accepts are not timed)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(n)
    addr = listener.getsockname()

    def one() -> float:
        spent = 0.0
        for _ in range(n):
            t = time.thread_time()
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect(addr)
            s.close()
            spent += time.thread_time() - t
            listener.accept()[0].close()
        return spent / n

    try:
        return _median(rounds, one)
    finally:
        listener.close()


def _sender(addr: tuple[str, int], data: bytes, times: int) -> None:
    with socket.create_connection(addr) as s:
        for _ in range(times):
            s.sendall(data)


def recv(rounds: int, pages: list[bytes]) -> float:
    """CPU seconds per byte received on loopback TCP into a reused buffer (sender in another process)."""
    data = b"".join(pages)
    buf = bytearray(256 * 1024)
    view = memoryview(buf)

    def one() -> float:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        child = multiprocessing.Process(target=_sender, args=(listener.getsockname(), data, 3))
        child.start()
        conn, _ = listener.accept()
        got = 0
        t = time.thread_time()
        while got < 3 * len(data):
            n = conn.recv_into(view)
            if not n:
                break
            got += n
        spent = time.thread_time() - t
        conn.close()
        listener.close()
        child.join()
        return spent / got

    return _median(rounds, one)


def pipe(rounds: int, pages: list[bytes]) -> float:
    """CPU seconds per byte handed over a Unix stream socket (both sides, one thread: send a page, read it)."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    buf = bytearray(max(map(len, pages)))
    view = memoryview(buf)
    total = sum(map(len, pages))

    def one() -> float:
        t = time.thread_time()
        for page in pages:
            a.sendall(page)
            got = 0
            while got < len(page):
                got += b.recv_into(view[got:])
        return (time.thread_time() - t) / total

    try:
        return _median(rounds, one)
    finally:
        a.close()
        b.close()


def parse(rounds: int, pages: list[bytes]) -> float:
    """CPU seconds per page for lexbor's parse and its CSS query of the link-bearing tags."""

    def one() -> float:
        t = time.thread_time()
        for page in pages:
            LexborHTMLParser(page).css(_QUERY)
        return (time.thread_time() - t) / len(pages)

    return _median(rounds, one)


def warc(rounds: int, pages: list[bytes]) -> float:
    """CPU seconds per page for the response record's gzip member (ISA-L level 1) and its two SHA-1 digests."""

    def one() -> float:
        t = time.thread_time()
        for page in pages:
            z = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
            z.compress(page)
            z.flush()
            hashlib.sha1(page).digest()
            hashlib.sha1(page).digest()
        return (time.thread_time() - t) / len(pages)

    return _median(rounds, one)


def _rates(bench_json: Path | None) -> tuple[dict[str, float], float | None, dict[str, float]]:
    """Per-page rates of one bench run (or the issue's real web), its node ms/page and its split."""
    if bench_json is None:
        return dict(_REAL), None, {}
    runs = json.loads(bench_json.read_text())["runs"]
    run = next(iter(runs.values()))[0]
    mix, pages = run["web_mix"], run["pages"]
    seconds = mix["seconds"]
    requests = mix["requests"] * seconds / 60.0
    rates = {
        "requests": requests / pages,
        "new_connections": run["new_connections"] / pages,
        "https": mix["https_per_request"],
        "bytes": mix["kb_per_request"] * 1000.0 * requests / pages,
        "redis_ms": run["ms_per_page"]["redis"],
    }
    return rates, run["node_ms_per_page"], run["ms_per_page"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-json", type=Path, help="a `trawl bench --json` file: its first run's rates")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    args = ap.parse_args()
    pages = _pages(args.corpus)
    rates, measured, split = _rates(args.bench_json)
    r = args.rounds
    per_byte = {"tls-read": tls_read(r, pages), "recv": recv(r, pages), "pipe": pipe(r, pages)}
    page_bytes = statistics.mean(map(len, pages))
    rows = [
        ("tls-handshake", tls_handshake(r) * rates["new_connections"] * rates["https"]),
        ("tcp-connect", tcp_connect(r) * rates["new_connections"]),
        ("tls-read", per_byte["tls-read"] * rates["bytes"] * rates["https"]),
        ("recv", per_byte["recv"] * rates["bytes"]),
        ("pipe", per_byte["pipe"] * rates["bytes"]),
        ("parse", parse(r, pages)),
        ("warc", warc(r, pages)),
        ("redis", rates["redis_ms"] / 1000.0),
    ]
    print(f"rates per page: {', '.join(f'{k} {v:,.3f}' for k, v in rates.items())}")
    print(f"corpus: {len(pages)} pages, mean {page_bytes / 1000:.0f} KB; per MB: ", end="")
    print(", ".join(f"{k} {v * 1e9:.3f} ms" for k, v in per_byte.items()))
    floor = 0.0
    for name, seconds in rows:
        floor += seconds
        print(f"  {name:<14} {seconds * 1000:7.3f} ms/page")
    print(f"  {'floor':<14} {floor * 1000:7.3f} ms/page")
    if measured is not None:
        print(f"measured node: {measured:.3f} ms/page ({', '.join(f'{k} {v:.2f}' for k, v in split.items())})")
        print(f"Python and everything not in the floor: {measured - floor * 1000:.3f} ms/page")


if __name__ == "__main__":
    main()
